"""`--format parquet`: pyarrow reads every table back equal to its CSV,
value for value, with the column types docs/experiments.md documents."""

import csv
import pathlib

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from conftest import ROOT

DATA = ROOT / "crates" / "pep-exp" / "tests" / "data"

F, U, I, S = pa.float64(), pa.uint64(), pa.int64(), pa.string()

RUN_TYPES = {
    "goodput": [F, S, U, F],
    "links": [F, S, U, F, F],
    "queues": [F, S, U, U],
    "cwnd": [F, S, U, U],
    "tseq": [F, S, S, I, I, U, U, S],
    "agents": [F, S, S, F],
}


def assert_same(directory: pathlib.Path, stem: str, types):
    with open(directory / f"{stem}.csv", newline="") as f:
        rows = list(csv.reader(f))
    table = pq.read_table(directory / f"{stem}.parquet")
    assert table.column_names == rows[0], stem
    assert table.schema.types == types, stem
    assert table.num_rows == len(rows) - 1 > 0, stem
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    for r, line in enumerate(rows[1:]):
        for c, text in enumerate(line):
            value, ty = columns[c][r], types[c]
            where = f"{stem}.csv row {r + 1} column {rows[0][c]}"
            if value is None:
                assert text == "", where
            elif ty == F:
                assert float(text) == value, where
            elif ty in (U, I):
                assert int(text) == value, where
            else:
                assert text == value, where
    # pandas reads it too, integers as integers where none is missing.
    df = pd.read_parquet(directory / f"{stem}.parquet")
    assert len(df) == table.num_rows
    for name, ty in zip(table.column_names, types):
        if ty in (U, I) and table.column(name).null_count == 0:
            assert pd.api.types.is_integer_dtype(df[name]), (stem, name)


def test_a_runs_parquet_tables_equal_its_csv(pep, tmp_path):
    out = tmp_path / "run"
    series = '["goodput","links","queues","cwnd","tseq"]'
    pep("sim", "run", "-q", "-o", out, "--duration", "3s",
        "--set", f"output.series={series}", "--format", "csv,parquet")
    for stem, types in RUN_TYPES.items():
        assert_same(out, stem, types)
    # Parquet alone: no CSV written.
    only = tmp_path / "only"
    pep("sim", "run", "-q", "-o", only, "--duration", "1s", "--format", "parquet")
    assert sorted(p.name for p in only.glob("*.csv")) == []
    assert (only / "goodput.parquet").is_file()


def test_a_sweeps_parquet_tables_equal_its_csv(pep, tmp_path):
    base = pep("sim", "default").stdout
    (tmp_path / "base.toml").write_text(base)
    (tmp_path / "pq.toml").write_text((DATA / "pq.toml").read_text())
    out = tmp_path / "out"
    pep("sim", "sweep", tmp_path / "pq.toml", "-q", "-o", out, "--no-plots", "--format", "parquet")
    assert_same(out, "results", [S, U, I, S, F, F])
    assert_same(out, "aggregate", [S, I, S, S, U, F, F, F, F])
