"""The command line of a sweep in shards: plan, shards in any order (one
twice), merge == one `pep sim sweep`, byte for byte, plots included."""

from conftest import ROOT

DATA = ROOT / "crates" / "pep-exp" / "tests" / "data"


def write_experiment(d):
    """12 runs: 6 points x 2 seeds (the files tests/shard.rs uses)."""
    for name in ["base.toml", "shards.toml"]:
        (d / name).write_text((DATA / "shards" / name).read_text())
    return d / "shards.toml"


def test_shards_then_merge_equal_one_sweep(pep, tmp_path):
    exp = write_experiment(tmp_path)
    pep("sim", "sweep", exp, "-q", "-j", "2", "-o", tmp_path / "whole")
    pieces = tmp_path / "pieces"
    assert "12 runs planned" in pep("sim", "sweep", "plan", exp, "-o", pieces).stdout
    said = [pep("sim", "sweep", "run", pieces, "--shard", s, "-j", "1").stdout
            for s in ["3/3", "1/3", "3/3", "2/3"]]
    assert "(4 reused, 0 ran)" in said[2], said
    pep("sim", "sweep", "merge", pieces)
    for name in ["results.csv", "aggregate.csv", "plots/queue.svg"]:
        assert (pieces / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
