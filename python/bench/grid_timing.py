"""Wall time of a sweep three ways (docs/python.md, "Speed"): `pep sim
sweep --jobs 2`, pepkit on a Dask LocalCluster of 2 worker processes, and
a Slurm job array on a one-node cluster started here (the Slurm test's,
python/tests/test_slurm.py; needs root, slurm-wlm and munge).

    GRID="scenarios/gschwandtner/fig48-n5.toml scenarios/gschwandtner/fig48-n50.toml" \
    SHORT=1 PEP_BIN=target/debug/pep \
    python -m pytest -s -q python/bench/grid_timing.py

Prints one line per way; the three tables are checked equal, byte for byte.
"""

import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python/tests"))

from test_slurm import cluster, wait  # noqa: E402,F401 (the fixture)

import pepkit  # noqa: E402

PEP = os.environ.get("PEP_BIN", str(ROOT / "target/debug/pep"))
GRID = [ROOT / g for g in os.environ.get("GRID", "scenarios/gschwandtner/fig48-n5.toml").split()]
SHORT = ["--short"] if os.environ.get("SHORT") == "1" else []
TABLES = ["results.csv", "aggregate.csv"]
times = {}


def pep(*args, **kw):
    return subprocess.run([PEP, *map(str, args)], check=True, capture_output=True, text=True, **kw)


def test_local_dask_and_slurm(tmp_path, cluster):
    from distributed import Client, LocalCluster

    t = time.monotonic()
    for g in GRID:
        pep("sim", "sweep", g, *SHORT, "-j", "2", "-q", "--no-plots", "-o", tmp_path / "local" / g.stem)
    times["local, pep sim sweep --jobs 2"] = time.monotonic() - t

    t0 = time.monotonic()
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as lc, Client(lc) as client:
        t = time.monotonic()
        for g in GRID:
            pepkit.sweep(g, executor=client, short=bool(SHORT), out=tmp_path / "dask" / g.stem)
        times["pepkit.sweep on 2 Dask workers"] = time.monotonic() - t
    times["  the same with the cluster's start and stop"] = time.monotonic() - t0

    env, ns, logs = cluster
    t = time.monotonic()
    for g in GRID:
        out = tmp_path / "slurm" / g.stem
        pep("sim", "sweep", "slurm", g, *SHORT, "-o", out, "--tasks-per-job", "1", "--partition", "pep")
        r = subprocess.run([*ns, str(out / "submit.sh")], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

    def finished():
        q = subprocess.run([*ns, "squeue", "-h"], env=env, capture_output=True, text=True)
        return q.returncode == 0 and q.stdout.strip() == ""

    wait("the jobs", finished, 7200, logs)
    times["Slurm array, 1 run per task, 2 CPUs"] = time.monotonic() - t

    for g in GRID:
        for way in ["dask", "slurm"]:
            for n in TABLES:
                assert (tmp_path / way / g.stem / n).read_bytes() == (tmp_path / "local" / g.stem / n).read_bytes()
    print()
    print(f"grid: {' '.join(g.name for g in GRID)}{' --short' if SHORT else ''}; pep: {PEP}")
    for k, v in times.items():
        print(f"  {k:48s} {v:8.1f} s")
