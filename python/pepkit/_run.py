"""One run of a scenario."""

import json

from . import _arrow, _native
from ._scenario import _overrides, as_scenario


class Result:
    """A finished run: ``summary`` (a dict, as ``summary.json``), the series
    as pandas DataFrames (``goodput``, ``links``, ``queues``, ``cwnd``,
    ``tseq``, ``agents``; ``None`` when the scenario did not record it)
    and as pyarrow tables in ``arrow``. Columns and types are the CSV and
    Parquet files' (docs/experiments.md, "Parquet")."""

    def __init__(self, summary, arrow):
        self.summary = summary
        self.arrow = arrow
        self._frames = {}

    def table(self, name):
        """The series ``name`` as a DataFrame (``None`` if not recorded)."""
        if name not in self.arrow:
            return None
        if name not in self._frames:
            self._frames[name] = self.arrow[name].to_pandas()
        return self._frames[name]

    @property
    def names(self):
        return list(self.arrow)

    goodput = property(lambda self: self.table("goodput"))
    goodput_total = property(lambda self: self.table("goodput_total"))
    links = property(lambda self: self.table("links"))
    queues = property(lambda self: self.table("queues"))
    cwnd = property(lambda self: self.table("cwnd"))
    tseq = property(lambda self: self.table("tseq"))
    time_sequence = tseq
    agents = property(lambda self: self.table("agents"))
    # Above 10,000 link directions: each one's totals (summary.json names
    # the busiest).
    link_totals = property(lambda self: self.table("link_totals"))

    @property
    def flows(self):
        """Each flow's totals as a DataFrame, one row per flow: the
        ``flows`` table above 1,000 flows (where ``summary`` gives their
        distributions instead), else ``summary["flows"]`` in its columns."""
        if "flows" in self.arrow:
            return self.table("flows")
        import pandas as pd

        rows = [{c: f.get(_FIELD.get(c, c)) for c in _FLOW_COLUMNS} for f in self.summary["flows"]]
        return pd.DataFrame(rows, columns=_FLOW_COLUMNS)

    def __repr__(self):
        s = self.summary
        return (
            f"<pepkit.Result {s['scenario']} seed {s['seed']}: "
            f"{s['total_goodput_mbps']} Mbit/s; series {', '.join(self.arrow)}>"
        )


# The flows table's columns (docs/simulator.md), named as summary.json's
# entries name them but for the flow's name.
_FLOW_COLUMNS = [
    "flow", "from", "to", "delivered_bytes", "goodput_mbps", "segments_sent",
    "retransmitted_segments", "fast_retransmits", "timeouts", "local_drops",
    "completion_s", "srtt_ms",
]
_FIELD = {"flow": "name"}


def run(scenario, seed=None, overrides=None, out=None, parquet=False):
    """Runs ``scenario`` (a :class:`Scenario`, a path or TOML text) to its
    end and returns a :class:`Result`.

    ``seed`` replaces the master seed (``pep sim run --seed``);
    ``overrides`` is ``{"path": value}``, applied in order as ``--set
    path=value`` (``{"link[r1-r2].rate": "20Mbps", "scenario.duration":
    "5s"}``). With ``out``, the run's files are also written there as
    ``pep sim run -o`` writes them (CSV, and Parquet with ``parquet``).

    Raises :class:`pepkit.ScenarioError` for an invalid scenario, and
    ``KeyboardInterrupt`` when Ctrl-C stopped it.
    """
    sc = as_scenario(scenario)
    summary, streams = _native.run(
        sc.text,
        sc.origin,
        seed=seed,
        overrides=_overrides(overrides),
        out=None if out is None else str(out),
        parquet=parquet,
    )
    return Result(json.loads(summary), _arrow.tables(streams))
