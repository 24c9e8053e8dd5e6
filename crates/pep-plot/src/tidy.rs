//! Loading tidy CSV (one observation per row, a header naming the columns),
//! as the simulator writes (`goodput.csv`, `links.csv`, `queues.csv`,
//! `cwnd.csv`), into [`Series`] and [`Samples`].
//!
//! ```
//! use pep_plot::tidy::Table;
//! let csv = "time_s,flow,bytes\n0.1,a,10\n0.1,b,20\n0.2,a,30\n";
//! let t = Table::parse("goodput.csv", csv).unwrap();
//! let s = t.series_by("flow", "time_s", "bytes").unwrap();
//! assert_eq!(s[0].name, "a");
//! assert_eq!(s[0].points, vec![(0.1, 10.0), (0.2, 30.0)]);
//! let err = t.series_by("flow", "time_s", "goodput_mbps").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "goodput.csv: no column 'goodput_mbps'; columns are: time_s, flow, bytes"
//! );
//! ```
//!
//! Format: comma-separated, first non-blank line is the header, blank lines
//! are ignored, a trailing `\r` is dropped, cells are trimmed, and a cell may
//! be double-quoted (`"a,b"`, with `""` for a quote) but not span lines.
//! Every row must have as many cells as the header.
//!
//! Numbers: an **empty cell means "no value"** (the simulator leaves
//! `ssthresh_bytes` empty while unset): rows with an empty x or y cell are
//! left out of that series, silently. `nan`, `inf` and `-inf` parse, and are
//! then skipped and counted when the chart is drawn. Anything else that is
//! not a number is an error naming the file, line and column.

use std::path::Path;

use crate::{PlotError, Samples, Series};

/// A parsed CSV file: header and rows of text cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    name: String,
    columns: Vec<String>,
    /// (1-based line number, cells)
    rows: Vec<(usize, Vec<String>)>,
}

/// Read and parse a CSV file. Errors name the file as given.
pub fn load(path: impl AsRef<Path>) -> Result<Table, PlotError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Table::parse(&path.display().to_string(), &text)
}

impl Table {
    /// Parse CSV text; `name` (usually the file name) is used in errors.
    /// A file with a header but no rows is an error ([`PlotError::NoRows`]),
    /// and so is an empty one ([`PlotError::EmptyFile`]).
    pub fn parse(name: &str, text: &str) -> Result<Table, PlotError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((hline, header)) = lines.next() else {
            return Err(PlotError::EmptyFile {
                file: name.to_string(),
            });
        };
        let columns = split_row(name, hline, header)?;
        let mut rows = Vec::new();
        for (line, l) in lines {
            let cells = split_row(name, line, l)?;
            if cells.len() != columns.len() {
                return Err(PlotError::BadRow {
                    file: name.to_string(),
                    line,
                    message: format!(
                        "{} cells, but the header has {} columns",
                        cells.len(),
                        columns.len()
                    ),
                });
            }
            rows.push((line, cells));
        }
        if rows.is_empty() {
            return Err(PlotError::NoRows {
                file: name.to_string(),
            });
        }
        Ok(Table {
            name: name.to_string(),
            columns,
            rows,
        })
    }

    /// The name used in errors (the path given to [`load`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Column names, in header order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Number of data rows (at least one).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Always false: a table without rows is an error when parsed.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Index of a column, or an error listing the columns there are.
    pub fn column(&self, column: &str) -> Result<usize, PlotError> {
        self.columns
            .iter()
            .position(|c| c == column)
            .ok_or_else(|| PlotError::NoColumn {
                file: self.name.clone(),
                column: column.to_string(),
                available: self.columns.clone(),
            })
    }

    /// The text of one column, row by row.
    pub fn text(&self, column: &str) -> Result<Vec<&str>, PlotError> {
        let c = self.column(column)?;
        Ok(self.rows.iter().map(|(_, r)| r[c].as_str()).collect())
    }

    /// One numeric column, row by row: `None` for an empty cell.
    pub fn numbers(&self, column: &str) -> Result<Vec<Option<f64>>, PlotError> {
        let c = self.column(column)?;
        self.rows
            .iter()
            .map(|(line, r)| self.number(*line, column, &r[c]))
            .collect()
    }

    fn number(&self, line: usize, column: &str, cell: &str) -> Result<Option<f64>, PlotError> {
        if cell.is_empty() {
            return Ok(None);
        }
        cell.parse::<f64>()
            .map(Some)
            .map_err(|_| PlotError::BadNumber {
                file: self.name.clone(),
                line,
                column: column.to_string(),
                value: cell.to_string(),
            })
    }

    /// All rows as one series named `name`, in row order.
    pub fn series(&self, name: &str, x_col: &str, y_col: &str) -> Result<Series, PlotError> {
        let xs = self.numbers(x_col)?;
        let ys = self.numbers(y_col)?;
        let points = xs
            .into_iter()
            .zip(ys)
            .filter_map(|(x, y)| Some((x?, y?)))
            .collect::<Vec<_>>();
        Ok(Series::new(name, points))
    }

    /// One series per distinct value of `group_col` (e.g. `flow`, `link`),
    /// named after it, in order of first appearance; points in row order.
    pub fn series_by(
        &self,
        group_col: &str,
        x_col: &str,
        y_col: &str,
    ) -> Result<Vec<Series>, PlotError> {
        let groups = self.text(group_col)?;
        let xs = self.numbers(x_col)?;
        let ys = self.numbers(y_col)?;
        let mut out: Vec<Series> = Vec::new();
        for ((g, x), y) in groups.into_iter().zip(xs).zip(ys) {
            let i = group_index(&mut out, g, |s| &s.name, |n| Series::new(n, []));
            if let (Some(x), Some(y)) = (x, y) {
                out[i].points.push((x, y));
            }
        }
        Ok(out)
    }

    /// All values of a column as one set of samples.
    pub fn samples(&self, name: &str, col: &str) -> Result<Samples, PlotError> {
        let v = self.numbers(col)?;
        Ok(Samples::new(name, v.into_iter().flatten()))
    }

    /// The values of `col` grouped by `group_col`, in order of first
    /// appearance (for histograms and CDFs).
    pub fn samples_by(&self, group_col: &str, col: &str) -> Result<Vec<Samples>, PlotError> {
        let groups = self.text(group_col)?;
        let vals = self.numbers(col)?;
        let mut out: Vec<Samples> = Vec::new();
        for (g, v) in groups.into_iter().zip(vals) {
            let i = group_index(&mut out, g, |s| &s.name, |n| Samples::new(n, []));
            if let Some(v) = v {
                out[i].values.push(v);
            }
        }
        Ok(out)
    }
}

/// Index of the group named `g` in `out`, appending a new one if needed.
/// Linear search keeps first-appearance order (groups are few).
fn group_index<T>(
    out: &mut Vec<T>,
    g: &str,
    name: impl Fn(&T) -> &String,
    new: impl Fn(&str) -> T,
) -> usize {
    match out.iter().position(|s| name(s) == g) {
        Some(i) => i,
        None => {
            out.push(new(g));
            out.len() - 1
        }
    }
}

/// Split one CSV line into trimmed cells, honouring double quotes.
fn split_row(file: &str, line: usize, text: &str) -> Result<Vec<String>, PlotError> {
    let mut cells = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut cell = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        cell.push('"');
                    }
                    Some('"') => break,
                    Some(c) => cell.push(c),
                    None => {
                        return Err(PlotError::BadRow {
                            file: file.to_string(),
                            line,
                            message: "unterminated quoted cell".into(),
                        })
                    }
                }
            }
            while chars.peek().is_some_and(|c| *c != ',') {
                if !chars.next().is_some_and(char::is_whitespace) {
                    return Err(PlotError::BadRow {
                        file: file.to_string(),
                        line,
                        message: "text after a closing quote".into(),
                    });
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                cell.push(c);
                chars.next();
            }
            cell = cell.trim_end().to_string();
        }
        cells.push(cell);
        if chars.next().is_none() {
            return Ok(cells);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_quotes_and_spaces() {
        let r = split_row("f", 1, r#" a , "b,c" ,"d""e",,f"#).unwrap();
        assert_eq!(r, ["a", "b,c", "d\"e", "", "f"]);
        assert!(split_row("f", 3, "\"abc").is_err());
        assert!(split_row("f", 3, "\"a\"b,c").is_err());
    }
}
