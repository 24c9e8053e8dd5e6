"""Where the `pep` binary is: $PEP_BIN, or the workspace's debug build."""

import os
import pathlib
import subprocess

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
