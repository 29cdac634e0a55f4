//! zmem-corpus: where a page sample comes from — captured from processes or
//! a zram device, generated, or read from a corpus file with its sidecar —
//! and the zstd dictionaries trained on one.

mod capture;
mod corpus;
mod dict;
mod info;
mod load;
mod machine;
mod private;
mod sidecar;
mod synth;
mod user;

pub use capture::{
    capture_all, capture_device, capture_group, capture_machine, capture_pids, machine_scope,
    to_file,
};
pub use corpus::{
    default_corpus, default_sections, from_sections, load_all, open_checked, Corpus, Section,
    DEFAULT_SEED,
};
pub use dict::{
    is_zstd_dict, samples as dict_samples, train as train_dict, DEFAULT_SIZE as DEFAULT_DICT_SIZE,
    MAX_SAMPLES as MAX_DICT_SAMPLES,
};
pub use info::info;
pub use load::{files_or_default, joined_or_machine, verdict_capture};
pub use machine::{default_corpus_with_memory, DEFAULT_CAPTURE};
pub use private::{check_dict_output, write_dict};
pub use sidecar::{
    count_same_filled, now_unix, path_for as sidecar_path, Region, Sidecar, Skipped,
};
pub use synth::{fill, generate, write_corpus, Kind, Rng, KIND_NAMES};
