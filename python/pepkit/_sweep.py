"""Sweeps and reproductions.

A sweep is a list of tasks, each a pure function of its text (the resolved
scenario and a seed) that gives a record. Locally the native runner does
them on threads; with an executor each task goes to ``executor.submit``,
its record comes back and is stored here, and the tables are built from
the records as ``pep sim sweep merge`` builds them.
"""

import json
import os
import pathlib
import tempfile

from . import _arrow, _native


class SweepResult:
    """A finished sweep: ``results`` (one row per point and seed) and
    ``aggregate`` (mean, sd, 95% CI per point and measure) as DataFrames,
    the directory ``out`` holding ``results.csv`` and ``aggregate.csv``,
    and how many runs were ``ran`` and ``reused``."""

    def __init__(self, out, arrow, ran, reused):
        self.out = pathlib.Path(out)
        self.arrow = arrow
        self.ran = ran
        self.reused = reused
        self.results = arrow["results"].to_pandas()
        self.aggregate = arrow["aggregate"].to_pandas()

    def __repr__(self):
        return f"<pepkit.SweepResult {self.out}: {len(self.results)} runs ({self.ran} ran)>"


def sweep(
    experiment,
    executor=None,
    out=None,
    jobs=None,
    short=False,
    fresh=False,
    parquet=False,
    plots=False,
):
    """Runs every point and seed of the experiment file ``experiment``.

    ``executor``: ``None`` runs on ``jobs`` local threads (default: the
    cores), as ``pep sim sweep``; otherwise any object with
    ``submit(fn, *args)`` returning futures with ``.result()``: a
    ``concurrent.futures`` executor, a Dask ``distributed.Client``. Each
    task is sent as text and its record comes back; a record already in
    ``out`` is not run again (unless ``fresh``).

    ``out`` defaults to ``out/<experiment name>`` as in the CLI; ``short``
    applies the experiment's ``[short]`` table; ``parquet`` adds
    ``results.parquet`` and ``aggregate.parquet``; ``plots`` draws the
    experiment's plots into ``out/plots``. Returns a :class:`SweepResult`.
    """
    path = pathlib.Path(experiment)
    if out is None:
        out = pathlib.Path("out") / _name(path)
    out = pathlib.Path(out)
    if executor is None:
        counts, streams = _native.sweep(
            str(path), str(out), jobs or os.cpu_count() or 1, short, fresh, parquet, plots
        )
        c = json.loads(counts)
        return SweepResult(out, _arrow.tables(streams), c["ran"], c["reused"])

    todo = _native.plan(str(path), str(out), short, fresh)
    futures = [executor.submit(run_task, t) for t in todo]
    try:
        for task, fut in zip(todo, futures):
            record, files = fut.result()
            _store(out, task, record, files)
    except BaseException:
        # Ctrl-C or a failed task: what is not started is not wanted; the
        # records stored so far stay (a rerun reuses them).
        for f in futures:
            f.cancel()
        raise
    streams = _native.merge(str(out), parquet, plots)
    total = len(json.loads((out / "plan.json").read_text())["tasks"])
    return SweepResult(out, _arrow.tables(streams), len(todo), total - len(todo))


def run_task(task):
    """Runs one task (JSON text) wherever the executor put it; returns its
    record (JSON text) and the files of its series, if it keeps them, as
    ``{name: bytes}`` (no shared file system needed)."""
    with tempfile.TemporaryDirectory(prefix="pepkit-") as d:
        record = _native.run_task(task, d)
        files = {p.name: p.read_bytes() for p in sorted(pathlib.Path(d).iterdir())}
    return record, files


def _store(out, task, record, files):
    """A task's series, then its record (the record vouches for them)."""
    if files:
        point = json.loads(task)["point_id"]
        d = out / "points" / point
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (d / name).write_bytes(data)
    _native.store_record(str(out), task, record)


def _name(path):
    """The experiment's name (``[experiment] name``), for the default out."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    return json.loads(_native.parse(text, str(path)))["experiment"]["name"]


def papers():
    """The papers :func:`reproduce` knows: ``{name: title}``."""
    return dict(_native.papers())


def reproduce(paper, out="out/reproduce", full=False, jobs=None, scenarios=None):
    """``pep reproduce paper``: runs the paper's experiments (shortened
    unless ``full``) and checks its claims. Returns the report as a dict:
    ``claims`` (each with ``id``, ``statement``, ``verdict`` -- "pass",
    "FAIL" or "skipped" -- and ``reason``), ``tally``, ``failed`` and the
    paths of ``report`` (Markdown; an HTML one is beside it)."""
    text = _native.reproduce(
        paper,
        str(out),
        full,
        jobs or os.cpu_count() or 1,
        None if scenarios is None else str(scenarios),
    )
    return json.loads(text)
