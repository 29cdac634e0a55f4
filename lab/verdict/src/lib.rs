//! zmem-verdict: the decision — which configuration to deploy, from
//! measurements: the weighted score, the verdict's interleaved rounds with
//! their statistics and ties, the complete table, and the recommendation
//! (algorithm, sizes, swappiness, page-cluster, zram or zswap).

mod decision;
mod full;
mod job;
mod rank;
mod ranked;
mod ranked_table;
mod reason;
mod recommend;
mod score;
mod table;

pub use decision::{Decision, Margin, MARGIN_SLOWER, TIE_RULE};
pub use full::{run as run_full, Dict, Options as FullOptions, DICT_LABEL};
pub use job::{decide, fs_dir, full_table, inputs, Ask, Decided, Progress};
pub use rank::{
    rank, winner_page_clusters, IfKernelHad, Options as RankOptions, Ranked, Ranking, BUDGET,
    INFO_ROUNDS,
};
pub use ranked_table::to_table;
pub use reason::{margin_text, stop_text};
pub use recommend::{
    device_section, machine_facts, recommend_ranked, sizes, swappiness, zram_section, Inputs,
    Recommendation, Sizes,
};
pub use score::{best_for, scores, BestFor, Metrics, Weights, WEIGHTS_FORM};
pub use table::{assemble, FullRow, FullTable, Missing};
pub use zmem_trial::{ci_rank, interval, interval_at, Interval};
pub use zmem_trial::{
    look_error, look_index, next_look, separate, Call, Separation, FIRST_LOOK, TOTAL_ERROR,
};
