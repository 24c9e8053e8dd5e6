"""examples/: the quickstart notebook executes; the Snakefile's sweep
equals `pep sim sweep`."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def test_the_quickstart_notebook_executes(tmp_path):
    import nbclient
    import nbformat

    nb = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    # The notebook writes its sweep to out/ under its working directory.
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    client = nbclient.NotebookClient(
        nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(work)}}
    )
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors, errors
    # It drew the goodput plot and the sweep's table.
    kinds = {k for c in nb.cells if c.cell_type == "code" for o in c.outputs for k in o.get("data", {})}
    assert "image/png" in kinds
    assert (work / "out" / "geo-loss" / "results.csv").is_file()


def test_the_snakefile_sweep_equals_the_cli(pep, tmp_path):
    snakemake = shutil.which("snakemake") or str(pathlib.Path(sys.executable).parent / "snakemake")
    if not os.path.exists(snakemake):
        pytest.fail("snakemake is not installed (python/tests/requirements.txt has it)")
    pep_bin = os.environ.get("PEP_BIN", str(ROOT / "target" / "debug" / "pep"))
    exp = ROOT / "crates/pep-exp/tests/data/shards/shards.toml"
    out = tmp_path / "snake"
    r = subprocess.run(
        [
            snakemake,
            "-s", str(EXAMPLES / "Snakefile"),
            "--cores", "2",
            "--directory", str(tmp_path),
            "--config", f"pep={pep_bin}", f"experiment={exp}", f"out={out}", "shards=3",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert sorted(p.name for p in (out / "shards").iterdir()) == [f"{i}-of-3.done" for i in (1, 2, 3)]
    cli = tmp_path / "cli"
    pep("sim", "sweep", exp, "-o", cli, "-q", "--no-plots")
    for name in ["results.csv", "aggregate.csv"]:
        assert (out / name).read_bytes() == (cli / name).read_bytes(), name
