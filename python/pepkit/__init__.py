"""pepkit: the pepkit simulator from Python.

* :class:`Scenario` -- a scenario from TOML (a file or text) or a dict;
  :meth:`Scenario.check` raises :class:`ScenarioError` with the CLI's
  ``file:line:col: field: message``.
* :func:`run` -- one run; its series are pandas DataFrames (through Arrow,
  never CSV text) and its summary a dict.
* :func:`sweep` -- an experiment file's every point and seed, on local
  threads or on any ``concurrent.futures``-like executor (a Dask
  ``distributed.Client``, a ``ProcessPoolExecutor``); the tables are the
  ones ``pep sim sweep`` writes, byte for byte.
* :func:`reproduce` -- a paper's claims checked against our runs.

The simulator runs with the GIL released; Ctrl-C stops a run or a sweep
cleanly (a sweep keeps the records of the runs that finished).
See docs/python.md.
"""

from ._native import ExperimentError, ScenarioError
from ._run import Result, run
from ._scenario import Scenario
from ._sweep import SweepResult, papers, reproduce, sweep

__all__ = [
    "ExperimentError",
    "Result",
    "Scenario",
    "ScenarioError",
    "SweepResult",
    "papers",
    "reproduce",
    "run",
    "sweep",
]
__version__ = "0.1.0"
