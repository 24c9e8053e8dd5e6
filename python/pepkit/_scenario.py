"""Scenarios: TOML text with a name for its errors (its path, or a label)."""

import json
import os
import pathlib

from . import _native


class Scenario:
    """A scenario as TOML text, and where it came from (named in errors).

    Build one with :meth:`from_toml` or :meth:`from_dict`; nothing is
    validated until :meth:`check` (or :func:`pepkit.run`) does.
    """

    def __init__(self, text, origin="<string>"):
        self.text = text
        self.origin = origin
        # Syntax errors at once, placed as the CLI places them.
        self._doc = json.loads(_native.parse(text, origin))

    @classmethod
    def from_toml(cls, path_or_text):
        """A scenario file (a ``pathlib.Path``, or a one-line ``str`` ending
        in ``.toml``) or TOML text (any other ``str``)."""
        if isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str)
            and "\n" not in path_or_text
            and path_or_text.strip().endswith(".toml")
        ):
            path = pathlib.Path(path_or_text)
            # Relative files the scenario names are relative to its directory.
            return cls(path.read_text(encoding="utf-8"), str(path_or_text))
        return cls(path_or_text)

    @classmethod
    def from_dict(cls, d, origin="<dict>"):
        """A scenario from a dict shaped as the TOML file (``{"scenario":
        {"name": ...}, "link": [...], ...}``)."""
        return cls(_native.toml_of_json(json.dumps(d)), origin)

    def to_dict(self):
        """The TOML document as a dict (a fresh copy)."""
        return json.loads(json.dumps(self._doc))

    def to_toml(self):
        return self.text

    @property
    def name(self):
        return self._doc.get("scenario", {}).get("name")

    def check(self, overrides=None):
        """Validates the scenario (with ``overrides`` applied, as
        :func:`pepkit.run` would); raises :class:`pepkit.ScenarioError`
        naming every problem, returns the warnings (settings that have no
        effect) as the CLI prints them."""
        return _native.check(self.text, self.origin, _overrides(overrides))

    def __eq__(self, other):
        return isinstance(other, Scenario) and self._doc == other._doc

    def __repr__(self):
        return f"Scenario({self.name!r} from {self.origin})"


def _overrides(overrides):
    """``{"link[r1-r2].rate": "20Mbps"}`` as the JSON the native side reads."""
    if not overrides:
        return None
    return json.dumps({str(k): v for k, v in overrides.items()})


def as_scenario(s):
    """A Scenario from a Scenario, a path or TOML text."""
    return s if isinstance(s, Scenario) else Scenario.from_toml(s)
