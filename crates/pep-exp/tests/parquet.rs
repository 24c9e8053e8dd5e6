//! `--format parquet`: every table read back with the parquet crate equals
//! its CSV value for value, with the documented column types; the same
//! run writes the same bytes.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::Array;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pep_exp::{sweep, Experiment, Mode, SweepConfig};
use pep_sim::table::write_csv_file;
use pep_sim::{Scenario, Simulation};

/// The cells of a Parquet file, as the CSV text each should have been, and
/// its column types.
fn parquet_cells(path: &Path) -> (Vec<String>, Vec<DataType>, Vec<Vec<Option<String>>>) {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = b.schema().clone();
    let names = schema.fields().iter().map(|f| f.name().clone()).collect();
    let types = schema
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    let mut rows = Vec::new();
    for batch in b.build().unwrap() {
        let batch = batch.unwrap();
        for i in 0..batch.num_rows() {
            let row = batch
                .columns()
                .iter()
                .map(|c| {
                    if c.is_null(i) {
                        return None;
                    }
                    Some(match c.data_type() {
                        DataType::Float64 => c.as_primitive::<Float64Type>().value(i).to_string(),
                        DataType::UInt64 => c.as_primitive::<UInt64Type>().value(i).to_string(),
                        DataType::Int64 => c.as_primitive::<Int64Type>().value(i).to_string(),
                        DataType::Utf8 => c.as_string::<i32>().value(i).to_string(),
                        t => panic!("{}: unexpected column type {t}", path.display()),
                    })
                })
                .collect();
            rows.push(row);
        }
    }
    (names, types, rows)
}

/// Asserts `stem.parquet` holds `stem.csv`'s values with `types`.
fn assert_same(dir: &Path, stem: &str, types: &[DataType]) {
    let text = std::fs::read_to_string(dir.join(format!("{stem}.csv"))).unwrap();
    let records = pep_plot::tidy::records(stem, &text).unwrap();
    let (names, got_types, rows) = parquet_cells(&dir.join(format!("{stem}.parquet")));
    assert_eq!(names, records[0].1, "{stem}: columns");
    assert_eq!(got_types, types, "{stem}: types");
    assert_eq!(rows.len(), records.len() - 1, "{stem}: rows");
    assert!(!rows.is_empty(), "{stem}: no rows to compare");
    for (row, (line, csv)) in rows.iter().zip(&records[1..]) {
        for ((cell, text), ty) in row.iter().zip(csv).zip(types) {
            match (cell, ty) {
                (None, _) => assert_eq!(text, "", "{stem}:{line}: null"),
                // A float is the same double: its CSV text reads back as it.
                (Some(v), DataType::Float64) => assert_eq!(
                    v.parse::<f64>().unwrap().to_bits(),
                    text.parse::<f64>().unwrap().to_bits(),
                    "{stem}:{line}: {v} vs {text}"
                ),
                (Some(v), _) => assert_eq!(v, text, "{stem}:{line}"),
            }
        }
    }
}

#[test]
fn a_runs_parquet_tables_equal_its_csv() {
    use DataType::{Float64 as F, Int64 as I, UInt64 as U, Utf8 as S};
    // The default scenario has a PEP agent (agents.csv); tseq adds signed
    // offsets and null ACKs, cwnd null ssthresh.
    let all = toml::Value::Array(
        ["goodput", "links", "queues", "cwnd", "tseq"]
            .map(toml::Value::from)
            .to_vec(),
    );
    let overrides = [
        ("output.series".to_string(), all),
        ("scenario.duration".to_string(), "3s".into()),
    ];
    let sc = Scenario::from_toml_str_with(
        pep_sim::scenario::DEFAULT_SCENARIO_TOML,
        "default.toml",
        &overrides,
    )
    .unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let dir = tempfile::tempdir().unwrap();
    let written = sim
        .write_outputs_as(dir.path(), &[write_csv_file, pep_exp::parquet::write_file])
        .unwrap();
    let tables: [(&str, &[DataType]); 6] = [
        ("goodput", &[F, S, U, F]),
        ("links", &[F, S, U, F, F]),
        ("queues", &[F, S, U, U]),
        ("cwnd", &[F, S, U, U]),
        ("tseq", &[F, S, S, I, I, U, U, S]),
        ("agents", &[F, S, S, F]),
    ];
    for (stem, types) in tables {
        assert!(written.contains(&format!("{stem}.parquet")), "{written:?}");
        assert_same(dir.path(), stem, types);
    }
    // Same run, same bytes: nothing machine- or time-dependent in a file.
    let again = tempfile::tempdir().unwrap();
    sim.write_outputs_as(again.path(), &[pep_exp::parquet::write_file])
        .unwrap();
    for (stem, _) in tables {
        let name = format!("{stem}.parquet");
        let read = |d: &Path| std::fs::read(d.join(&name)).unwrap();
        assert!(read(dir.path()) == read(again.path()), "{name} differs");
    }
}

#[test]
fn a_sweeps_parquet_tables_equal_its_csv() {
    use DataType::{Float64 as F, Int64 as I, UInt64 as U, Utf8 as S};
    let dir = tempfile::tempdir().unwrap();
    let base = pep_sim::scenario::DEFAULT_SCENARIO_TOML;
    std::fs::write(dir.path().join("base.toml"), base).unwrap();
    let exp = include_str!("data/pq.toml");
    std::fs::write(dir.path().join("pq.toml"), exp).unwrap();
    let exp = Experiment::load(&dir.path().join("pq.toml")).unwrap_or_else(|e| panic!("{e}"));
    let out = dir.path().join("out");
    let cfg = SweepConfig {
        out: out.clone(),
        jobs: 2,
        mode: Mode::Full,
        fresh: false,
        cancel: None,
    };
    let outcome = sweep(&exp, &cfg, &mut |_| {}).unwrap();
    let results = outcome.results.unwrap();
    results
        .write_tables_as(&out, &[pep_exp::parquet::write_file])
        .unwrap();
    let n_m = results.measures.len();
    let mut res = vec![S, U, I, S];
    res.extend(std::iter::repeat_n(F, n_m));
    assert_same(&out, "results", &res);
    assert_same(&out, "aggregate", &[S, I, S, S, U, F, F, F, F]);
}
