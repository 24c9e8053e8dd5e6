//! The result schema: a results table described once, its columns (name
//! and type) and its cells, row by row. The CSV writer here (and
//! `pep_sim::table::write_csv_file` for files) and the Parquet writer
//! (`pep_exp::parquet`) both read the same description, so the two formats
//! cannot disagree on a column, its order or its values.
//!
//! Rows are produced on demand by a closure over the simulation's own
//! records: a long series is never held twice.

use std::borrow::Cow;
use std::io::{self, Write};

use pep_core::time::fmt_out::secs;
use pep_core::Instant;

/// A column's type, as Parquet stores it (docs/experiments.md, "Parquet",
/// lists each table's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// 64-bit float (`double`).
    Float,
    /// Unsigned 64-bit integer.
    UInt,
    /// Signed 64-bit integer.
    Int,
    /// UTF-8 text.
    Text,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
}

impl Column {
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
        }
    }
}

/// One cell. `Null` is an empty CSV cell and a Parquet null.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    Float(f64),
    /// A time, in a `Float` column of seconds: written to CSV as the exact
    /// decimal ("1.25"), to Parquet as ns / 1e9 (the same double: one
    /// correctly rounded division of two exact operands).
    Time(Instant),
    UInt(u64),
    Int(i64),
    Text(Cow<'a, str>),
    Null,
}

impl Cell<'_> {
    /// The value of a `Float` column's cell.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Cell::Float(v) => Some(v),
            Cell::Time(t) => Some(t.as_nanos() as f64 / 1e9),
            Cell::UInt(v) => Some(v as f64),
            Cell::Int(v) => Some(v as f64),
            _ => None,
        }
    }

    /// The cell's CSV text (quoted where RFC 4180 asks).
    pub fn csv(&self) -> Cow<'_, str> {
        match self {
            Cell::Float(v) => v.to_string().into(),
            Cell::Time(t) => secs(*t).into(),
            Cell::UInt(v) => v.to_string().into(),
            Cell::Int(v) => v.to_string().into(),
            Cell::Text(s) => quote(s),
            Cell::Null => "".into(),
        }
    }
}

/// Quotes a cell that holds a comma, a quote or a line break (RFC 4180).
pub fn quote(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

type RowFn<'a> = dyn Fn(usize, &mut Vec<Cell<'a>>) + 'a;

/// A named table: `name.csv`, `name.parquet`.
pub struct Table<'a> {
    pub name: String,
    pub columns: Vec<Column>,
    /// Number of rows.
    pub len: usize,
    row: Box<RowFn<'a>>,
}

impl<'a> Table<'a> {
    /// `row(i, cells)` pushes row `i`'s cells, one per column, in order.
    pub fn new(
        name: impl Into<String>,
        columns: Vec<Column>,
        len: usize,
        row: impl Fn(usize, &mut Vec<Cell<'a>>) + 'a,
    ) -> Table<'a> {
        Table {
            name: name.into(),
            columns,
            len,
            row: Box::new(row),
        }
    }

    /// Row `i`'s cells, appended to `out` (cleared first).
    pub fn row(&self, i: usize, out: &mut Vec<Cell<'a>>) {
        out.clear();
        (self.row)(i, out);
        debug_assert_eq!(out.len(), self.columns.len(), "table {}", self.name);
    }

    /// The table as CSV: a header line, then one line per row.
    pub fn write_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        let head: Vec<Cow<str>> = self.columns.iter().map(|c| quote(&c.name)).collect();
        writeln!(w, "{}", head.join(","))?;
        let mut cells = Vec::with_capacity(self.columns.len());
        for i in 0..self.len {
            self.row(i, &mut cells);
            for (k, c) in cells.iter().enumerate() {
                if k > 0 {
                    w.write_all(b",")?;
                }
                w.write_all(c.csv().as_bytes())?;
            }
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The CSV text.
    pub fn csv(&self) -> String {
        let mut v = Vec::new();
        self.write_csv(&mut v).expect("writing to memory");
        String::from_utf8(v).expect("cells are UTF-8")
    }
}
