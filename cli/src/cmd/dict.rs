//! `zmem dict train`: a zstd dictionary for pages, for zram's
//! `algorithm_params algo=zstd dict=FILE` and `zmem bench --dict FILE`.

use std::path::PathBuf;

use anyhow::Result;
use zmem_corpus::Corpus;

use crate::output::Format;

/// Arguments of `zmem dict`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Train a zstd dictionary on the pages of a corpus (same-filled pages left out)
    #[command(
        after_help = "Then compare: zmem bench full CORPUS --algo zstd --dict DICT\n\
Use with kernel zram: echo \"algo=zstd dict=/path/DICT\" > /sys/block/zramN/algorithm_params"
    )]
    Train(TrainArgs),
}

#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    /// Corpus file of raw 4 KiB pages
    pub corpus: PathBuf,
    /// Output dictionary file (an existing file that is not a zstd dictionary is refused)
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Overwrite an existing output file that is not a zstd dictionary
    #[arg(long)]
    pub force: bool,
    /// Largest dictionary size
    #[arg(long, default_value = "16K")]
    pub size: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: Args) -> Result<()> {
    match a.cmd {
        Cmd::Train(t) => train(t),
    }
}

fn train(t: TrainArgs) -> Result<()> {
    let size = crate::args::size_of("--size", &t.size)?;
    zmem_corpus::check_dict_output(&t.output, t.force)?;
    let c = Corpus::load(&t.corpus)?;
    let samples = zmem_corpus::dict_samples(c.bytes(), 1).len();
    let d = zmem_corpus::train_dict(c.bytes(), usize::try_from(size).unwrap_or(usize::MAX), 1)?;
    // Its content section is raw bytes of the corpus's pages: private, like the capture.
    zmem_corpus::write_dict(&t.output, &d, t.force)?;
    match t.format {
        Format::Table => {
            println!("dictionary  {} ({} bytes, zstd format)", t.output.display(), d.len());
            println!("trained on  {samples} compressible pages of {} ({} pages)", t.corpus.display(), c.page_count());
            println!("next        zmem bench full {} --algo zstd --dict {}", t.corpus.display(), t.output.display());
        }
        Format::Json => println!(
            "{{\"dictionary\":{:?},\"bytes\":{},\"corpus\":{:?},\"pages\":{},\"samples\":{samples}}}",
            t.output.display().to_string(),
            d.len(),
            t.corpus.display().to_string(),
            c.page_count()
        ),
        Format::Csv => {
            println!("dictionary,bytes,corpus,pages,samples");
            println!(
                "{},{},{},{},{samples}",
                super::capture::csv_field(&t.output.display().to_string()),
                d.len(),
                super::capture::csv_field(&t.corpus.display().to_string()),
                c.page_count()
            );
        }
    }
    Ok(())
}
