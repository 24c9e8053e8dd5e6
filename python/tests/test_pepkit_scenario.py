"""pepkit.Scenario: TOML and dicts round trip; errors read as the CLI's."""

import os
import pathlib
import subprocess

import pytest

import pepkit

DATA = pathlib.Path(__file__).parent / "data"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_scenario_round_trips_through_a_dict_and_toml():
    sc = pepkit.Scenario.from_toml(DATA / "lossy.toml")
    assert sc.name == "lossy"
    d = sc.to_dict()
    assert d["link"][1]["queue"] == {"limit": 25}
    again = pepkit.Scenario.from_dict(d)
    assert again == sc
    assert pepkit.Scenario.from_toml(again.to_toml()).to_dict() == d
    # Valid all three ways, with the same (empty) warnings.
    assert sc.check() == again.check() == []
    # A change made in the dict is in the scenario built from it.
    d["link"][1]["rate"] = "4Mbps"
    changed = pepkit.Scenario.from_dict(d)
    assert changed != sc and changed.to_dict()["link"][1]["rate"] == "4Mbps"


def test_a_bad_value_raises_with_its_line_as_the_cli_says(tmp_path):
    text = (DATA / "lossy.toml").read_text().replace('rate = "8Mbps"', 'rate = "8 parsecs"')
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "parsecs" in l)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(pepkit.ScenarioError) as e:
        pepkit.Scenario.from_toml(str(path)).check()
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line}:8: link[1].rate: "), msg
    [d] = e.value.diagnostics
    assert (d["line"], d["column"], d["field"]) == (line, 8, "link[1].rate")
    # Word for word what `pep sim check` prints.
    cli = subprocess.run(
        [os.environ.get("PEP_BIN", str(ROOT / "target/debug/pep")), "sim", "check", str(path)], capture_output=True, text=True
    )
    assert cli.returncode != 0
    assert cli.stderr.splitlines()[0] == msg
    # The same from text: only the origin differs.
    with pytest.raises(pepkit.ScenarioError, match=rf"^<string>:{line}:8: link\[1\]\.rate: "):
        pepkit.run(text)


def test_a_syntax_error_is_raised_at_once_with_its_position():
    with pytest.raises(pepkit.ScenarioError, match=r"^<string>:3:\d+: "):
        pepkit.Scenario.from_toml('[scenario]\nname = "x"\nduration = \n')


def test_a_bad_override_names_the_field():
    sc = pepkit.Scenario.from_toml(DATA / "lossy.toml")
    with pytest.raises(pepkit.ScenarioError, match=r"link\[1\]\.rate"):
        sc.check({"link[1].rate": "fast"})
    assert sc.check({"link[1].rate": "9Mbps"}) == []
