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
//! Format: comma-separated (RFC 4180), first non-blank line is the header,
//! blank lines are ignored, a trailing `\r` is dropped, cells are trimmed,
//! and a cell may be double-quoted: a quoted cell keeps its text as it is,
//! commas, `""` for a quote and line breaks included (a record may span
//! lines). Every row must have as many cells as the header. Errors about a
//! row name the line its record starts on; an unterminated quote names the
//! line it opens on.
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
        let mut records = records(name, text)?.into_iter();
        let Some((_, columns)) = records.next() else {
            return Err(PlotError::EmptyFile {
                file: name.to_string(),
            });
        };
        let mut rows = Vec::new();
        for (line, cells) in records {
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

/// Split CSV text into records, the header included: `(line, cells)` with
/// the 1-based line each record starts on. Follows RFC 4180 (a quoted cell
/// may hold commas, `""` for a quote, and line breaks) with the leniencies of
/// [this module](self): a leading byte order mark is dropped, blank lines are
/// skipped, cells are trimmed of spaces and tabs outside quotes, and `\r\n`
/// ends a record like `\n`. Records may differ in length; [`Table::parse`]
/// checks them against the header. `name` is used in errors.
///
/// ```
/// let r = pep_plot::tidy::records("r.csv", "a,b\n\"x\ny\",\"say \"\"hi\"\"\"\n").unwrap();
/// assert_eq!(r[1], (2, vec!["x\ny".to_string(), "say \"hi\"".to_string()]));
/// ```
pub fn records(name: &str, text: &str) -> Result<Vec<(usize, Vec<String>)>, PlotError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bad = |line: usize, message: &str| PlotError::BadRow {
        file: name.to_string(),
        line,
        message: message.to_string(),
    };
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    // The line `chars` is on.
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut cells = Vec::new();
        // Whether the record had a quoted cell (then it is not blank).
        let mut quoted_any = false;
        // One cell per pass; the record ends at an unquoted newline or EOF.
        loop {
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            let mut cell = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                quoted_any = true;
                let opened = line;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            cell.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            cell.push(c);
                        }
                        None => return Err(bad(opened, "unterminated quoted cell")),
                    }
                }
                while chars.peek().is_some_and(|c| *c != ',' && *c != '\n') {
                    if !chars.next().is_some_and(char::is_whitespace) {
                        return Err(bad(line, "text after a closing quote"));
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '\n' {
                        break;
                    }
                    cell.push(c);
                    chars.next();
                }
                cell.truncate(cell.trim_end().len());
            }
            cells.push(cell);
            match chars.next() {
                Some(',') => {}
                Some('\n') => {
                    line += 1;
                    break;
                }
                _ => break,
            }
        }
        let blank = !quoted_any && cells.len() == 1 && cells[0].is_empty();
        if !blank {
            out.push((start, cells));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(text: &str) -> Vec<Vec<String>> {
        records("f", text)
            .unwrap()
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }

    #[test]
    fn splits_quotes_and_spaces() {
        assert_eq!(
            cells(r#" a , "b,c" ,"d""e",,f"#),
            [["a", "b,c", "d\"e", "", "f"]]
        );
        let line = |e: PlotError| match e {
            PlotError::BadRow { line, message, .. } => (line, message),
            e => panic!("{e}"),
        };
        let e = line(records("f", "a\n\n\"abc").unwrap_err());
        assert_eq!(e, (3, "unterminated quoted cell".to_string()));
        let e = line(records("f", "a\n\"a\"b,c").unwrap_err());
        assert_eq!(e, (2, "text after a closing quote".to_string()));
    }

    #[test]
    fn records_span_lines_inside_quotes() {
        let r = records("f", "a,b\r\n\"x\n\ny\" ,1\r\n\n  \n\"\",2\n3,\"\"\"\"\"\"").unwrap();
        assert_eq!(
            r,
            [
                (1, vec!["a".into(), "b".into()]),
                (2, vec!["x\n\ny".into(), "1".into()]),
                (7, vec!["".into(), "2".into()]),
                (8, vec!["3".into(), "\"\"".into()]),
            ]
        );
        // A quoted empty cell alone is a record, not a blank line.
        assert_eq!(cells("a\n\"\"\n"), [vec!["a"], vec![""]]);
        assert_eq!(cells("a\n \t\r\n"), [vec!["a"]]);
    }
}
