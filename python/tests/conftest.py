"""Where the `pep` binary is: $PEP_BIN, or the workspace's debug build."""

import os
import pathlib
import subprocess

import pandas as pd

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pep():
    exe = pathlib.Path(os.environ.get("PEP_BIN", ROOT / "target" / "debug" / "pep"))
    if not exe.is_file():
        # Not a skip: the tests have nothing to check without it.
        pytest.fail(f"{exe}: no pep binary (cargo build -p pep-cli, or set PEP_BIN)")

    def run(*args, cwd=None):
        return subprocess.run(
            [str(exe), *map(str, args)], cwd=cwd, check=True, capture_output=True, text=True
        )

    return run


@pytest.fixture(scope="session")
def same_as_csv():
    """Checks a DataFrame against a CSV file, cell for cell."""

    def same_as_csv(frame, path):
        """Every cell of the CSV file is the DataFrame's: text as text (an
        empty cell an empty string or a null), numbers parsed by Python's
        correctly rounded float(), an empty number cell NaN."""
        want = pd.read_csv(path, dtype=str, keep_default_na=False)
        assert list(frame.columns) == list(want.columns), path.name
        assert len(frame) == len(want) > 0, path.name
        for c in want.columns:
            got, cells = frame[c], want[c].tolist()
            if pd.api.types.is_numeric_dtype(got):
                exp = [float(x) if x != "" else None for x in cells]
                vals = [None if pd.isna(v) else float(v) for v in got.tolist()]
                assert vals == exp, (path.name, c)
            else:
                assert [v if isinstance(v, str) else "" for v in got.tolist()] == cells, (path.name, c)

    return same_as_csv
