//! Tables as Parquet files (`--format parquet`): one file per table, the
//! columns and values of its CSV ([`pep_sim::table`] describes both), typed:
//! `Float` as double, `UInt` as uint64, `Int` as int64, `Text` as UTF-8,
//! empty cells as nulls. Uncompressed, and byte-identical for the same
//! table (no timestamps in the file).

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use pep_sim::table::{Cell, ColumnType, Table};

/// Rows per record batch (and row group): a long series is converted a
/// slice at a time.
const BATCH: usize = 1 << 16;

fn data_type(t: ColumnType) -> DataType {
    match t {
        ColumnType::Float => DataType::Float64,
        ColumnType::UInt => DataType::UInt64,
        ColumnType::Int => DataType::Int64,
        ColumnType::Text => DataType::Utf8,
    }
}

/// The table's Arrow schema: every column nullable.
pub fn schema(t: &Table) -> Arc<Schema> {
    let fields: Vec<Field> = t
        .columns
        .iter()
        .map(|c| Field::new(&c.name, data_type(c.ty), true))
        .collect();
    Arc::new(Schema::new(fields))
}

enum Builder {
    Float(Float64Builder),
    UInt(UInt64Builder),
    Int(Int64Builder),
    Text(StringBuilder),
}

impl Builder {
    fn new(t: ColumnType) -> Builder {
        match t {
            ColumnType::Float => Builder::Float(Float64Builder::new()),
            ColumnType::UInt => Builder::UInt(UInt64Builder::new()),
            ColumnType::Int => Builder::Int(Int64Builder::new()),
            ColumnType::Text => Builder::Text(StringBuilder::new()),
        }
    }

    fn push(&mut self, c: &Cell, table: &str, column: &str) -> io::Result<()> {
        let wrong = || {
            io::Error::other(format!(
                "table {table}, column {column}: a {c:?} cell does not fit the column's type"
            ))
        };
        if *c == Cell::Null {
            self.push_null();
            return Ok(());
        }
        match (self, c) {
            (Builder::Float(b), c) => b.append_value(c.as_f64().ok_or_else(wrong)?),
            (Builder::UInt(b), Cell::UInt(v)) => b.append_value(*v),
            (Builder::Int(b), Cell::Int(v)) => b.append_value(*v),
            (Builder::Text(b), Cell::Text(s)) => b.append_value(s),
            _ => return Err(wrong()),
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::UInt(b) => Arc::new(b.finish()),
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Text(b) => Arc::new(b.finish()),
        }
    }
}

impl Builder {
    fn push_null(&mut self) {
        match self {
            Builder::Float(b) => b.append_null(),
            Builder::UInt(b) => b.append_null(),
            Builder::Int(b) => b.append_null(),
            Builder::Text(b) => b.append_null(),
        }
    }
}

/// The table as Arrow record batches of at most 65,536 rows, each
/// handed to `each` in order; an empty table gives one empty batch (the
/// schema still travels). The Parquet writer and the Python module
/// (`pep-py`, which hands them to pyarrow) both take them from here.
pub fn batches(t: &Table, mut each: impl FnMut(RecordBatch) -> io::Result<()>) -> io::Result<()> {
    let schema = schema(t);
    let mut builders: Vec<Builder> = t.columns.iter().map(|c| Builder::new(c.ty)).collect();
    let mut cells = Vec::with_capacity(t.columns.len());
    let mut start = 0;
    loop {
        let end = (start + BATCH).min(t.len);
        for i in start..end {
            t.row(i, &mut cells);
            for ((b, c), col) in builders.iter_mut().zip(&cells).zip(&t.columns) {
                b.push(c, &t.name, &col.name)?;
            }
        }
        let arrays: Vec<ArrayRef> = builders.iter_mut().map(Builder::finish).collect();
        each(RecordBatch::try_new(schema.clone(), arrays).map_err(io::Error::other)?)?;
        start = end;
        if start >= t.len {
            return Ok(());
        }
    }
}

/// Writes the table to `w` as Parquet.
pub fn write(t: &Table, w: impl io::Write + Send) -> io::Result<()> {
    let mut writer = ArrowWriter::try_new(w, schema(t), None).map_err(io::Error::other)?;
    batches(t, |b| writer.write(&b).map_err(io::Error::other))?;
    writer.close().map_err(io::Error::other)?;
    Ok(())
}

/// `dir/<name>.parquet` (a [`pep_sim::table::FileWriter`]).
pub fn write_file(t: &Table, dir: &Path) -> io::Result<String> {
    let name = format!("{}.parquet", t.name);
    let path = dir.join(&name);
    let f = io::BufWriter::new(File::create(&path)?);
    write(t, f).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    Ok(name)
}
