//! The one error type of the crate.

use std::path::PathBuf;

/// Everything that can go wrong loading data or rendering a chart.
///
/// Messages name the file, line and column where there is one, so they can be
/// shown to a user as they are.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A CSV file has no header row at all.
    #[error("{file}: empty file (no header row)")]
    EmptyFile {
        /// The file (or source name) being read.
        file: String,
    },
    /// A CSV file has a header but no data rows.
    #[error("{file}: no data rows under the header")]
    NoRows {
        /// The file (or source name) being read.
        file: String,
    },
    /// A column asked for by name is not in the header.
    #[error("{file}: no column '{column}'; columns are: {}", available.join(", "))]
    NoColumn {
        /// The file (or source name) being read.
        file: String,
        /// The column asked for.
        column: String,
        /// The columns the header has, in order.
        available: Vec<String>,
    },
    /// A CSV row is malformed (wrong field count, unterminated quote).
    #[error("{file}:{line}: {message}")]
    BadRow {
        /// The file (or source name) being read.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A non-empty cell of a numeric column does not parse as a number.
    #[error("{file}:{line}: column '{column}': cannot read '{value}' as a number")]
    BadNumber {
        /// The file (or source name) being read.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The column.
        column: String,
        /// The cell's text.
        value: String,
    },
    /// There is nothing to draw: no series, only empty series, or every point
    /// was skipped (NaN/inf, or non-positive on a log axis).
    #[error("nothing to plot in chart '{chart}': {reason}")]
    NoData {
        /// The chart's title (or kind when untitled).
        chart: String,
        /// Why.
        reason: String,
    },
    /// The chart specification is inconsistent (bad bin edges, empty axis
    /// range, size too small, an option the chart kind does not support).
    #[error("invalid chart '{chart}': {reason}")]
    Invalid {
        /// The chart's title (or kind when untitled).
        chart: String,
        /// Why.
        reason: String,
    },
    /// `render` was given a path whose extension is not `.png` or `.svg`.
    #[error("{}: unknown image format; use a .png or .svg file name", path.display())]
    UnknownFormat {
        /// The path given.
        path: PathBuf,
    },
    /// The drawing library failed (should not happen for valid charts).
    #[error("drawing failed: {0}")]
    Draw(String),
    /// PNG encoding failed.
    #[error("PNG encoding failed: {0}")]
    Png(String),
}
