//! A sweep's results: one row per point and seed, and the aggregate per
//! point and measure (mean, sample standard deviation, Student-t 95%
//! interval). Written as tidy CSV, read back for plots and claims.

use std::path::Path;

use pep_sim::table::{self, Cell, Column, ColumnType, Table};
use ColumnType::{Float, Text, UInt};

use toml::Value;

use crate::experiment::{value_text, Experiment, Point};
use crate::runner::{io_err, read_record, SweepError, Task};

/// One run's measures.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Index into [`Results::points`].
    pub point: usize,
    pub seed: u64,
    /// Aligned with [`Results::measures`]; `None` is an empty cell.
    pub values: Vec<Option<f64>>,
}

/// Mean and spread of one measure at one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Runs with a value.
    pub n: usize,
    pub mean: Option<f64>,
    /// Sample standard deviation (n - 1); `None` below two values.
    pub sd: Option<f64>,
    /// 95% interval, mean ± t(0.975, n-1) sd / √n; `None` below two values.
    pub ci95: Option<(f64, f64)>,
}

impl Stats {
    pub fn of(values: &[f64]) -> Stats {
        let n = values.len();
        if n == 0 {
            return Stats {
                n,
                mean: None,
                sd: None,
                ci95: None,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Stats {
                n,
                mean: Some(mean),
                sd: None,
                ci95: None,
            };
        }
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        let half = pep_plot::t975(n - 1) * sd / (n as f64).sqrt();
        Stats {
            n,
            mean: Some(mean),
            sd: Some(sd),
            ci95: Some((mean - half, mean + half)),
        }
    }
}

/// The results of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub params: Vec<String>,
    pub points: Vec<Point>,
    /// Measure texts, the column names.
    pub measures: Vec<String>,
    /// Sorted by point, then seed in the experiment's order.
    pub rows: Vec<Row>,
}

impl Results {
    /// Reads every task's record from `out/runs/` (they must all exist).
    pub fn from_records(exp: &Experiment, tasks: &[Task], out: &Path) -> Result<Self, SweepError> {
        let measures: Vec<String> = exp.measures.iter().map(|m| m.text.clone()).collect();
        let mut rows = Vec::with_capacity(tasks.len());
        for t in tasks {
            let rec = read_record(out, t).ok_or_else(|| SweepError::Io {
                path: crate::runner::record_path(out, t).display().to_string(),
                source: std::io::Error::other("missing or stale record"),
            })?;
            rows.push(Row {
                point: t.point,
                seed: t.seed,
                values: exp.measures.iter().map(|m| m.eval(&rec.summary)).collect(),
            });
        }
        Ok(Results {
            params: exp.params.clone(),
            points: exp.points.clone(),
            measures,
            rows,
        })
    }

    /// Index of a measure by its text.
    pub fn measure_index(&self, m: &str) -> Option<usize> {
        self.measures.iter().position(|x| x == m.trim())
    }

    /// The values of measure `m` at point `p`, over seeds (empty cells left
    /// out).
    pub fn values(&self, p: usize, m: usize) -> Vec<f64> {
        self.rows
            .iter()
            .filter(|r| r.point == p)
            .filter_map(|r| r.values[m])
            .collect()
    }

    pub fn stats(&self, p: usize, m: usize) -> Stats {
        Stats::of(&self.values(p, m))
    }

    /// The value text of parameter `k` at point `p` (empty: the base's).
    pub fn param_text(&self, p: usize, k: usize) -> String {
        self.points[p].values[k]
            .as_ref()
            .map(value_text)
            .unwrap_or_default()
    }

    /// The first point whose parameters read as `at` (`(path, value text)`).
    pub fn find_point(&self, at: &[(&str, &str)]) -> Option<usize> {
        (0..self.points.len()).find(|&p| {
            at.iter().all(|(k, v)| {
                self.params
                    .iter()
                    .position(|x| x == k)
                    .is_some_and(|i| self.param_text(p, i) == *v)
            })
        })
    }

    /// Parameter `k`'s column type: `Int` where every point's value is a
    /// TOML integer (its CSV text is the same), `Text` otherwise.
    fn param_type(&self, k: usize) -> ColumnType {
        let ints = self
            .points
            .iter()
            .all(|p| matches!(p.values[k], None | Some(Value::Integer(_))));
        if ints {
            ColumnType::Int
        } else {
            ColumnType::Text
        }
    }

    /// Parameter `k` at point `p`, as its column holds it.
    fn param_cell(&self, p: usize, k: usize, ty: ColumnType) -> Cell<'static> {
        match (&self.points[p].values[k], ty) {
            (None, _) => Cell::Null,
            (Some(Value::Integer(i)), ColumnType::Int) => Cell::Int(*i),
            (Some(v), _) => Cell::Text(value_text(v).into()),
        }
    }

    fn param_columns(&self) -> Vec<Column> {
        (0..self.params.len())
            .map(|k| Column::new(self.params[k].as_str(), self.param_type(k)))
            .collect()
    }

    /// The `results` table: point, seed, the parameters, one column per
    /// measure.
    pub fn results_table(&self) -> Table<'_> {
        let mut cols = vec![Column::new("point", Text), Column::new("seed", UInt)];
        cols.extend(self.param_columns());
        let types: Vec<ColumnType> = cols[2..].iter().map(|c| c.ty).collect();
        cols.extend(self.measures.iter().map(|m| Column::new(m.as_str(), Float)));
        Table::new("results", cols, self.rows.len(), move |i, v| {
            let r = &self.rows[i];
            v.push(Cell::Text(self.points[r.point].id.as_str().into()));
            v.push(Cell::UInt(r.seed));
            for (k, &ty) in types.iter().enumerate() {
                v.push(self.param_cell(r.point, k, ty));
            }
            v.extend(r.values.iter().map(|x| x.map_or(Cell::Null, Cell::Float)));
        })
    }

    /// The `aggregate` table: one row per point and measure.
    pub fn aggregate_table(&self) -> Table<'_> {
        let mut cols = vec![Column::new("point", Text)];
        cols.extend(self.param_columns());
        let types: Vec<ColumnType> = cols[1..].iter().map(|c| c.ty).collect();
        cols.push(Column::new("measure", Text));
        cols.push(Column::new("n", UInt));
        for name in ["mean", "sd", "ci95_lo", "ci95_hi"] {
            cols.push(Column::new(name, Float));
        }
        let n_m = self.measures.len();
        Table::new("aggregate", cols, self.points.len() * n_m, move |i, v| {
            let (p, m) = (i / n_m, i % n_m);
            let st = self.stats(p, m);
            v.push(Cell::Text(self.points[p].id.as_str().into()));
            for (k, &ty) in types.iter().enumerate() {
                v.push(self.param_cell(p, k, ty));
            }
            v.push(Cell::Text(self.measures[m].as_str().into()));
            v.push(Cell::UInt(st.n as u64));
            let (lo, hi) = st.ci95.unzip();
            let f = |x: Option<f64>| x.map_or(Cell::Null, Cell::Float);
            v.extend([f(st.mean), f(st.sd), f(lo), f(hi)]);
        })
    }

    /// `results.csv` text.
    pub fn results_csv(&self) -> String {
        self.results_table().csv()
    }

    /// `aggregate.csv` text: one row per point and measure.
    pub fn aggregate_csv(&self) -> String {
        self.aggregate_table().csv()
    }

    /// Writes `results.csv` and `aggregate.csv` into `out`.
    pub fn write_tables(&self, out: &Path) -> Result<(), SweepError> {
        self.write_tables_as(out, &[table::write_csv_file])
            .map(drop)
    }

    /// Writes the `results` and `aggregate` tables into `out` with each
    /// of `writers` (CSV, Parquet); returns the files' names.
    pub fn write_tables_as(
        &self,
        out: &Path,
        writers: &[table::FileWriter],
    ) -> Result<Vec<String>, SweepError> {
        let mut names = Vec::new();
        for t in [self.results_table(), self.aggregate_table()] {
            for w in writers {
                names.push(w(&t, out).map_err(io_err(&out.join(&t.name)))?);
            }
        }
        Ok(names)
    }

    /// Reads `results.csv` back, with the parameters and measures of the
    /// experiment that wrote it.
    pub fn load(dir: &Path, exp: &Experiment) -> Result<Results, String> {
        let path = dir.join("results.csv");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (has the sweep finished?)", path.display()))?;
        // Quoted cells may hold commas and line breaks (a varied
        // description): records, not lines.
        let records = pep_plot::tidy::records(&path.display().to_string(), &text)
            .map_err(|e| format!("{e} (a truncated file? `pep sim sweep` writes it again)"))?;
        let mut lines = records.into_iter();
        let head = lines.next().map(|(_, c)| c).unwrap_or_default();
        let n_p = exp.params.len();
        let measures: Vec<String> = head.iter().skip(2 + n_p).cloned().collect();
        if head.len() < 2 || head[2..2 + n_p.min(head.len() - 2)] != exp.params[..] {
            return Err(format!(
                "{}: its columns do not match experiment.toml",
                path.display()
            ));
        }
        let mut points: Vec<Point> = Vec::new();
        let mut rows = Vec::new();
        for (line, c) in lines {
            let at = format!("{}:{line}", path.display());
            if c.len() != head.len() {
                return Err(format!(
                    "{at}: {} cells, but the header has {} columns (a truncated file? \
                     `pep sim sweep` writes it again)",
                    c.len(),
                    head.len()
                ));
            }
            if points.last().map(|p| &p.id) != Some(&c[0]) {
                let values = c[2..2 + n_p]
                    .iter()
                    .map(|t| (!t.is_empty()).then(|| text_value(t)))
                    .collect();
                points.push(Point {
                    id: c[0].clone(),
                    values,
                });
            }
            let number = |col: usize| -> Result<Option<f64>, String> {
                let t = &c[col];
                if t.is_empty() {
                    return Ok(None);
                }
                t.parse().map(Some).map_err(|_| {
                    format!(
                        "{at}: column '{}': cannot read {t:?} as a number",
                        head[col]
                    )
                })
            };
            let seed = c[1]
                .parse()
                .map_err(|_| format!("{at}: column 'seed': not a seed: {:?}", c[1]))?;
            rows.push(Row {
                point: points.len() - 1,
                seed,
                values: (2 + n_p..c.len()).map(number).collect::<Result<_, _>>()?,
            });
        }
        Ok(Results {
            params: exp.params.clone(),
            points,
            measures,
            rows,
        })
    }
}

/// A cell's text read back as the value it was written from.
fn text_value(t: &str) -> Value {
    match toml::from_str::<toml::Table>(&format!("v = {t}")) {
        Ok(mut tb) => tb.remove("v").unwrap_or(Value::String(t.into())),
        Err(_) => Value::String(t.into()),
    }
}

/// Quotes a cell that holds a comma or a quote (RFC 4180).
pub fn cell(s: &str) -> String {
    pep_sim::table::quote(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_match_the_textbook() {
        let s = Stats::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.mean, Some(2.5));
        let sd = (5.0f64 / 3.0).sqrt();
        assert!((s.sd.unwrap() - sd).abs() < 1e-12);
        let half = 3.182 * sd / 2.0;
        let (lo, hi) = s.ci95.unwrap();
        assert!((lo - (2.5 - half)).abs() < 1e-12 && (hi - (2.5 + half)).abs() < 1e-12);
        assert_eq!(Stats::of(&[7.0]).ci95, None);
        assert_eq!(Stats::of(&[]).mean, None);
    }

    #[test]
    fn cells_quote_and_split_back() {
        let cells = [
            "a",
            "x,y",
            "say \"hi\"",
            "",
            r#"flow "f1".start"#,
            "two\nlines",
        ];
        let line: Vec<String> = cells.iter().map(|c| cell(c)).collect();
        let text = format!("{}\n", line.join(","));
        let back = pep_plot::tidy::records("r.csv", &text).unwrap();
        assert_eq!(back, [(1, cells.map(String::from).to_vec())]);
        assert_eq!(text_value("100"), Value::Integer(100));
        assert_eq!(text_value("10Mbps"), Value::String("10Mbps".into()));
        assert_eq!(text_value("reno"), Value::String("reno".into()));
    }
}
