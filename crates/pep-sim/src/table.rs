//! The result schema's tables ([`pep_model::table`]: columns, cells,
//! CSV text), re-exported where the simulator's writers and their users
//! have always found them, and the one part that touches files: writing a
//! table into a directory.

use std::io;
use std::path::Path;

pub use pep_model::table::{quote, Cell, Column, ColumnType, Table};

/// Writes one table into a directory in some format and returns the file
/// name: [`write_csv_file`], or `pep_exp::parquet::write_file`.
pub type FileWriter = fn(&Table, &Path) -> io::Result<String>;

/// `dir/<name>.csv`, streamed through a buffer.
pub fn write_csv_file(t: &Table, dir: &Path) -> io::Result<String> {
    let name = format!("{}.csv", t.name);
    let mut w = io::BufWriter::new(std::fs::File::create(dir.join(&name))?);
    t.write_csv(&mut w)?;
    w.into_inner().map_err(io::IntoInnerError::into_error)?;
    Ok(name)
}
