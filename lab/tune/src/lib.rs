//! `zmem tune`: the lab's prediction checked against the user's own workload
//! under real memory pressure, and the winner written as one config file.
//!
//! 1. **Learn** ([`zmem_trial::learn`](fn@zmem_trial::learn)): run the workload once in a cgroup of
//!    its own without pressure, and capture its anonymous pages near their
//!    peak (or take `--corpus`): the lab measures the pages this workload
//!    really swaps.
//! 2. **Predict** ([`predict`]): the lab's verdict on those pages
//!    ([`zmem_verdict::rank`]: kernel zram rows, interleaved rounds)
//!    gives each tier's per-page costs; a model turns them into the swap
//!    time of every configuration this kernel can run.
//! 3. **Measure** ([`zmem_trial::run`]): the best `K` and the baselines, in
//!    interleaved rounds under the memory limit, everything restored.
//! 4. **Compare** ([`compare`]): a candidate with a failed run cannot win;
//!    the others against the fastest complete one with the verdict's
//!    three-way call (behind, equivalent, undecided), the pick and whether
//!    it is proven; beside the predicted ranks, the rank correlation, the
//!    model's predicted against measured traffic and time (`check`), and
//!    what it means. No candidate that finished all its runs: no pick.
//! 5. **Deploy** ([`deploy`]): the winner, if any, as the file `zmem recommend
//!    --out-dir` writes, for `zmem apply` and `zmem persist`.
//!
//! Modules: `predict` and `compare` are pure (tested on figures), `candidates`
//! picks what to trial, `deploy` writes the file, `check` sets the model
//! beside the trials, `findings` says what the comparison means,
//! `render` prints, and `steps` runs the steps in order.

mod candidates;
mod check;
mod compare;
pub mod deploy;
mod findings;
mod outcome;
mod predict;
mod render;
mod steps;

pub use candidates::{Candidate, Role};
pub use check::{ModelCheck, ModelErrors, Spread};
pub use compare::{Decision, Measured, Standing, MARGIN_SHARE};
pub use outcome::{Held, Learn, Tune};
pub use predict::{Costs, Expect, ModelInputs, Prediction};
pub use render::{render_csv, render_html, render_table, to_json};
pub use steps::{run, TuneSpec};
