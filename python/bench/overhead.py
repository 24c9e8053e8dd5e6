"""Per-run overhead of pepkit.run against `pep sim run`: the same 1 s
simulation N times each way (docs/python.md, "Speed").

    python python/bench/overhead.py [--runs 100] [--pep target/debug/pep]

Prints the wall time per run of both, and the simulator's own time (the
CLI's run.json `wall_seconds`), so the rest is each path's overhead.
"""

import argparse
import json
import pathlib
import subprocess
import tempfile
import time

import pepkit

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios/examples/geo.toml"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--pep", default=str(ROOT / "target/debug/pep"))
    a = ap.parse_args()
    sc = pepkit.Scenario.from_toml(SCENARIO)
    over = {"scenario.duration": "1s"}
    pepkit.run(sc, overrides=over)  # imports and first-call costs out of the way
    with tempfile.TemporaryDirectory() as d:
        sim = 0.0
        t = time.perf_counter()
        for i in range(a.runs):
            out = pathlib.Path(d) / "cli"
            subprocess.run(
                [a.pep, "sim", "run", str(SCENARIO), "--duration", "1s", "-q", "-o", str(out)],
                check=True,
            )
            sim += json.loads((out / "run.json").read_text())["wall_seconds"]
        cli = (time.perf_counter() - t) / a.runs
    t = time.perf_counter()
    for i in range(a.runs):
        r = pepkit.run(sc, overrides=over)
        r.goodput, r.links, r.queues, r.cwnd  # the DataFrames, as a user reads them
    py = (time.perf_counter() - t) / a.runs
    sim /= a.runs
    print(f"{a.runs} runs of 1 s simulated ({SCENARIO.name}), per run:")
    print(f"  simulator alone (CLI run.json): {sim * 1e3:8.1f} ms")
    print(f"  pep sim run (process, CSV):     {cli * 1e3:8.1f} ms  (+{(cli - sim) * 1e3:.1f} ms)")
    print(f"  pepkit.run (DataFrames):        {py * 1e3:8.1f} ms  (+{(py - sim) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
