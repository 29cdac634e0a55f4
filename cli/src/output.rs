//! Output formats shared by every command: `--format table|json|csv`.

use clap::ValueEnum;

/// How a command prints its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Aligned columns for people
    #[default]
    Table,
    /// One JSON document (an array of row objects, or an object)
    Json,
    /// Comma-separated values with a header row; opens in a spreadsheet
    Csv,
}
