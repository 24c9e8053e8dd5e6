"""The command line of a sweep in shards: plan, shards in any order (one
twice), merge == one `pep sim sweep`, byte for byte, plots included."""

BASE = """
[scenario]
name = "pair"
duration = "2s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "10ms"
queue = { limit = 30 }
[link.forward]
loss = { kind = "bernoulli", p = 0.002 }
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = ["goodput", "queues"]
"""

EXPERIMENT = """
[experiment]
name = "shards"
base = "base.toml"
seeds = 2
measures = ["flow.f.goodput_mbps", "flow.f.retransmitted_segments"]
[vary]
"link[a-b].rate" = ["5Mbps", "20Mbps"]
"link[0].forward.loss.p" = [0.001, 0.01, 0.02]
[[plot]]
name = "queue"
kind = "over_time"
csv = "queues"
select = "a->b"
"""


def write_experiment(d):
    """12 runs: 6 points x 2 seeds."""
    (d / "base.toml").write_text(BASE)
    (d / "shards.toml").write_text(EXPERIMENT)
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
