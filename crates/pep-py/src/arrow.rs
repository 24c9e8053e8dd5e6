//! Tables as Arrow C streams (the Arrow C data interface): the record
//! batches the Parquet writer writes (`pep_exp::parquet::batches`), in a
//! stream that pyarrow takes over through a PyCapsule.

use std::io;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use pep_sim::table::Table;

/// The table's record batches, in order.
pub fn batches(t: &Table) -> io::Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    pep_exp::parquet::batches(t, |b| {
        out.push(b);
        Ok(())
    })?;
    Ok(out)
}

/// The table as an Arrow C stream: its schema (the Parquet file's), then
/// its batches. The stream owns its data; the table may go.
pub fn stream(t: &Table) -> io::Result<FFI_ArrowArrayStream> {
    let reader =
        RecordBatchIterator::new(batches(t)?.into_iter().map(Ok), pep_exp::parquet::schema(t));
    Ok(FFI_ArrowArrayStream::new(Box::new(reader)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::ffi_stream::RecordBatchStreamReader;
    use arrow_array::RecordBatchReader;
    use arrow_array::{Array, Float64Array, StringArray, UInt64Array};
    use pep_sim::table::{Cell, Column, ColumnType};

    #[test]
    fn a_stream_reads_back_as_the_csv_says() {
        let rows = [
            (1_250_000_000u64, "a", Some(3u64)),
            (2_000_000_001, "b,c", None),
        ];
        let cols = vec![
            Column::new("time_s", ColumnType::Float),
            Column::new("flow", ColumnType::Text),
            Column::new("bytes", ColumnType::UInt),
        ];
        let t = Table::new("t", cols, rows.len(), move |i, v| {
            let (ns, name, bytes) = rows[i];
            v.extend([
                Cell::Time(pep_core::Instant(ns)),
                Cell::Text(name.into()),
                bytes.map_or(Cell::Null, Cell::UInt),
            ]);
        });
        let csv = t.csv();
        let mut reader = RecordBatchStreamReader::try_new(stream(&t).unwrap()).unwrap();
        let schema = reader.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["time_s", "flow", "bytes"]);
        let b = reader.next().unwrap().unwrap();
        assert!(reader.next().is_none(), "one batch for two rows");
        let time = b.column(0).as_any().downcast_ref::<Float64Array>().unwrap();
        let flow = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        let bytes = b.column(2).as_any().downcast_ref::<UInt64Array>().unwrap();
        // Every CSV cell, parsed, is the Arrow value; an empty one a null.
        for (i, line) in csv.lines().skip(1).enumerate() {
            let (t, rest) = line.split_once(',').unwrap();
            let (f, n) = rest.rsplit_once(',').unwrap();
            assert_eq!(time.value(i), t.parse::<f64>().unwrap());
            assert_eq!(pep_sim::table::quote(flow.value(i)), f);
            match n {
                "" => assert!(bytes.is_null(i)),
                n => assert_eq!(bytes.value(i), n.parse::<u64>().unwrap()),
            }
        }
    }
}
