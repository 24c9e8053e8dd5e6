"""pepkit.run gives the CLI's tables, value for value, and its summary."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest

import pepkit

DATA = pathlib.Path(__file__).parent / "data"


def cli_tables(pep, tmp_path, *args):
    out = tmp_path / "cli"
    pep("sim", "run", DATA / "lossy.toml", "-q", "-o", out, *args)
    csv = {p.stem: p for p in out.glob("*.csv")}
    return out, csv


def test_run_equals_the_cli_value_for_value(pep, tmp_path, same_as_csv):
    out, csv = cli_tables(pep, tmp_path, "--seed", "7")
    r = pepkit.run(DATA / "lossy.toml", seed=7)
    assert sorted(r.names) == sorted(csv) == sorted(["goodput", "links", "queues", "cwnd", "tseq"])
    for name, path in csv.items():
        same_as_csv(r.table(name), path)
    assert r.summary == json.loads((out / "summary.json").read_text())
    assert r.summary["seed"] == 7
    # Typed as docs/experiments.md ("Parquet") says, not as text.
    assert str(r.goodput["bytes"].dtype) == "uint64"
    assert str(r.arrow["cwnd"].schema.field("ssthresh_bytes").type) == "uint64"


def test_overrides_are_the_clis_set(pep, tmp_path, same_as_csv):
    out, csv = cli_tables(pep, tmp_path, "--set", "link[1].rate=4Mbps", "--set", "scenario.duration=2s")
    r = pepkit.run(
        pepkit.Scenario.from_toml(DATA / "lossy.toml"),
        overrides={"link[1].rate": "4Mbps", "scenario.duration": "2s"},
    )
    assert r.summary == json.loads((out / "summary.json").read_text())
    assert r.summary["duration_s"] == 2.0
    same_as_csv(r.goodput, csv["goodput"])
    # The seed the file names, and another one changes the random losses.
    other = pepkit.run(DATA / "lossy.toml", seed=8, overrides={"scenario.duration": "2s"})
    assert other.summary["flows"] != r.summary["flows"]


def test_run_writes_the_clis_files_when_asked(pep, tmp_path):
    out, _ = cli_tables(pep, tmp_path, "--seed", "3")
    mine = tmp_path / "mine"
    pepkit.run(DATA / "lossy.toml", seed=3, out=mine)
    for p in sorted(out.glob("*.csv")) + [out / "summary.json"]:
        assert (mine / p.name).read_bytes() == p.read_bytes(), p.name


def test_the_gil_is_released_while_the_simulator_runs():
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    started = time.monotonic()
    t.start()
    try:
        pepkit.run(DATA / "lossy.toml", overrides={"scenario.duration": "1500s"})
    finally:
        done.set()
        t.join()
    took = time.monotonic() - started
    # Python ran all along: with the GIL held, the counter would stop
    # for the whole run (the waiting thread takes the GIL back every
    # 100 ms only to check for signals, and at once lets it go again).
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert took > 1.0, f"the run was too short to tell ({took:.2f} s)"
    assert len(ticks) > 100 * took * 0.2, f"{len(ticks)} ticks in {took:.2f} s"
    assert max(gaps) < 0.5, f"Python stalled {max(gaps):.3f} s during a {took:.2f} s run"


CTRL_C = """
import signal, sys, time, pepkit
# As at a terminal, even where the test runs in a background job (which
# starts with SIGINT ignored, and Python then leaves it so).
signal.signal(signal.SIGINT, signal.default_int_handler)
print("start", flush=True)
try:
    pepkit.run(sys.argv[1], overrides={"scenario.duration": "3600s"})
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_stops_a_run_cleanly():
    p = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, str(DATA / "lossy.toml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "start"
    time.sleep(1.0)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    stopped = time.monotonic() - sent
    assert p.returncode == 3, err
    assert out.strip() == "interrupted"
    # An hour of simulated time, stopped within one of its 1000 slices.
    assert stopped < 20, f"took {stopped:.1f} s to stop"


def test_above_a_thousand_flows_the_flows_are_a_table(pep, tmp_path, same_as_csv):
    out = tmp_path / "cli"
    pep("sim", "run", DATA / "many.toml", "-q", "-o", out)
    r = pepkit.run(DATA / "many.toml")
    assert r.summary == json.loads((out / "summary.json").read_text())
    assert "flows" not in r.summary
    assert r.summary["flow_stats"]["flows"] == 1001
    same_as_csv(r.flows, out / "flows.csv")
    assert len(r.flows) == 1001
    assert (r.flows["delivered_bytes"] == 4000).all()
    assert r.flows["completion_s"].median() == r.summary["flow_stats"]["completion_s"]["p50"]
    # 1,002 links, 2,004 directions: listed (their table starts above 10,000).
    assert len(r.summary["links"]) == 2004
    assert r.link_totals is None


def test_below_it_the_flows_frame_is_the_summarys_entries():
    r = pepkit.run(DATA / "lossy.toml", overrides={"scenario.duration": "2s"})
    assert "flows" not in r.arrow
    f = r.flows
    assert list(f["flow"]) == [e["name"] for e in r.summary["flows"]]
    assert list(f["goodput_mbps"]) == [e["goodput_mbps"] for e in r.summary["flows"]]
