//! zmem-report: the lab for people and programs — the verdict's ranking,
//! the complete table (text, CSV, JSON), the recommendation with its
//! reasons, the device benchmark's table and notes, the self-contained
//! HTML report, and `zmem trial`'s table, CSV and page.

mod codecs;
mod corpora;
mod device;
mod html;
mod modes;
mod ranking;
mod recommendation;
mod table;
mod trial;
mod verdict;
mod zswap;

pub use codecs::{codec_cells, CODECS_COLUMNS};
pub use corpora::corpus_lines;
pub use device::{device_cells, device_notes, DEVICE_COLUMNS};
pub use html::{pareto, render as html_report};
// The measurement modes' text (`MODE_text`, and `Text` rendering each registered mode).
pub use modes::*;
pub use ranking::ranking_text;
pub use recommendation::{error_json, pretty, recommendation_json, recommendation_text};
pub use table::{table_csv, table_json, table_text};
pub use trial::{trial_csv, trial_html, trial_table};
pub use verdict::verdict_text;
pub use zswap::{zswap_cells, zswap_notes, ZSWAP_COLUMNS};
