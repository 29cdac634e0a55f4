//! `zmem bench`'s measurements, one module per mode.
//!
//! A mode that prints one result per corpus is one entry: its module holds
//! its flags (`Args`, a `clap::Args` whose doc comment is the subcommand's
//! help), its measurement and its run ([`BenchMode`]); one row of
//! `measured!` below registers it (the module, the subcommand, the dispatch);
//! `report/src/modes.rs` renders its output ([`Renders`]). A mode whose
//! renderer is missing does not build.

use std::path::PathBuf;

use zmem_corpus::Corpus;

pub mod codecs;
pub mod device;
mod device_rows;
mod floor;
pub mod kernel;
pub(crate) mod random_read;
pub mod sample;
pub mod transport;
mod writeback_kernel;
pub mod zswap;
mod zswap_counters;
mod zswap_kernel;
mod zswap_worker;

/// A mode of `zmem bench`: its flags and what running them measures
/// (serialized for `--format json`).
pub trait BenchMode {
    type Output: serde::Serialize;
    fn run(&self) -> anyhow::Result<Self::Output>;
}

/// Renders a mode's output as text (the presentation crate implements it for
/// every registered mode's output).
pub trait Renders<T> {
    fn text(&self, out: &T) -> String;
}

macro_rules! measured {
    ($($variant:ident($module:ident)),* $(,)?) => {
        $(pub mod $module;)*

        /// The measurement modes, one subcommand each (its help: the doc
        /// comment of the module's `Args`).
        #[derive(clap::Subcommand, Debug)]
        pub enum Measured {
            $($variant($module::Args),)*
        }

        impl Measured {
            /// Runs the mode: its output as JSON, or as `render`'s text.
            pub fn run<R>(&self, render: &R, json: bool) -> anyhow::Result<String>
            where
                R: $(Renders<<$module::Args as BenchMode>::Output> +)* Sized,
            {
                match self {
                    $(Measured::$variant(a) => show(render, &a.run()?, json),)*
                }
            }
        }
    };
}

measured! {
    Recomp(recomp),
    Fastpath(fastpath),
    Writeback(writeback),
}

fn show<T: serde::Serialize, R: Renders<T>>(r: &R, out: &T, json: bool) -> anyhow::Result<String> {
    Ok(if json {
        format!("{}\n", serde_json::to_string_pretty(out)?)
    } else {
        r.text(out)
    })
}

/// Runs `run` on each corpus file, or on `default` without any.
pub(crate) fn per_corpus<R>(
    files: &[PathBuf],
    default: impl FnOnce() -> anyhow::Result<Corpus>,
    run: impl Fn(&Corpus) -> anyhow::Result<R>,
) -> anyhow::Result<Vec<R>> {
    let corpora = if files.is_empty() {
        vec![default()?]
    } else {
        zmem_corpus::load_all(files)?
    };
    corpora.iter().map(run).collect()
}

/// Nearest-rank percentile `p` (0..=1) of sorted samples; 0 when empty.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64
}
