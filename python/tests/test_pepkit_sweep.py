"""pepkit.sweep: locally, on a Dask LocalCluster and on a process pool,
the tables are `pep sim sweep`'s, byte for byte."""

import concurrent.futures
import os
import pathlib

import pytest

import pepkit

ROOT = pathlib.Path(__file__).resolve().parents[2]
# 6 points x 2 seeds, shared with crates/pep-exp/tests/shard.rs.
EXP = ROOT / "crates/pep-exp/tests/data/shards/shards.toml"
TABLES = ["results.csv", "aggregate.csv"]


@pytest.fixture(scope="module")
def cli(tmp_path_factory, pep):
    out = tmp_path_factory.mktemp("cli") / "sweep"
    pep("sim", "sweep", EXP, "-o", out, "-q", "--no-plots", "-j", "2")
    return out


def files(out):
    """The sweep's tables and the series of the points that keep them."""
    names = TABLES + sorted(
        str(p.relative_to(out)) for p in (out / "points").rglob("*") if p.is_file()
    )
    return {n: (out / n).read_bytes() for n in names}


def test_a_local_sweep_equals_the_cli(cli, tmp_path, same_as_csv):
    r = pepkit.sweep(EXP, out=tmp_path / "local", jobs=2)
    assert (r.ran, r.reused) == (12, 0)
    assert files(r.out) == files(cli)
    assert len(files(cli)) > len(TABLES), "the experiment keeps some points' series"
    same_as_csv(r.results, cli / "results.csv")
    same_as_csv(r.aggregate, cli / "aggregate.csv")
    assert len(r.results) == 12 and "flow.f.goodput_mbps" in r.results.columns
    # Run again: every record is reused, the tables are the same.
    again = pepkit.sweep(EXP, out=tmp_path / "local")
    assert (again.ran, again.reused) == (0, 12)
    assert files(again.out) == files(cli)


def test_a_sweep_on_a_dask_local_cluster_equals_the_local_sweep(cli, tmp_path):
    from distributed import Client, LocalCluster

    # Two worker processes, on loopback only; stopped when the test ends.
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster, Client(cluster) as client:
        workers = client.run(os.getpid)
        assert len(set(workers.values())) == 2 and os.getpid() not in workers.values()
        r = pepkit.sweep(EXP, executor=client, out=tmp_path / "dask")
        ran_on = client.run(lambda: __import__("pepkit")._native.build_identity())
    assert (r.ran, r.reused) == (12, 0)
    assert files(r.out) == files(cli)
    # The workers ran this very build: its records' keys name it.
    assert set(ran_on.values()) == {pepkit._native.build_identity()}


def test_a_process_pool_sweep_runs_only_the_missing_runs(cli, tmp_path):
    out = tmp_path / "pool"
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        first = pepkit.sweep(EXP, executor=pool, out=out)
        assert (first.ran, first.reused) == (12, 0)
        gone = sorted((out / "runs").glob("*.json"))[::4]
        for p in gone:
            p.unlink()
        again = pepkit.sweep(EXP, executor=pool, out=out)
    assert (again.ran, again.reused) == (len(gone), 12 - len(gone))
    assert files(out) == files(cli)


def test_a_record_of_another_task_is_refused(tmp_path):
    import json

    out = tmp_path / "x"
    tasks = pepkit._native.plan(str(EXP), str(out))
    record, _ = pepkit._sweep.run_task(tasks[1])
    with pytest.raises(ValueError, match="is not the result of task"):
        pepkit._native.store_record(str(out), tasks[0], record)
    assert json.loads(record)["seed"] == json.loads(tasks[1])["seed"]
