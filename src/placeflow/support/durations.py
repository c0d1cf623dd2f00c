"""The one duration syntax of every age flag (--max-age, --older-than, research's ages):
`30d`, `12h`, `90m`, `45s`, `2w`, or a bare number of days."""

from __future__ import annotations

import re
from datetime import timedelta

from placeflow.errors import OptionsError

DURATION_HELP = "30d, 12h, 90m, 2w; a bare number is days"
"""How every age flag (--max-age, --older-than) is written, as their help says it."""
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([wdhms]?)\s*$")
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1, "": 86400}


def parse_duration(text: str | float, *, flag: str = "--older-than") -> timedelta:
    """The one duration syntax of every age flag: `30d`, `12h`, `90m`, `45s`, `2w`, or a bare
    number of days (`7`, `0.5`, `0`) as a timedelta; `OptionsError` naming `flag` otherwise."""
    if isinstance(text, int | float) and not isinstance(text, bool) and text >= 0:
        return timedelta(days=float(text))
    found = _DURATION.match(str(text).lower())
    if found is None:
        raise OptionsError(f"{flag} takes a duration ({DURATION_HELP}), not {text!r}")
    return timedelta(seconds=float(found[1]) * _UNIT_SECONDS[found[2]])


def duration_days(text: str | float, *, flag: str = "--max-age") -> float:
    """A duration (`parse_duration`) in days."""
    return parse_duration(text, flag=flag).total_seconds() / 86400
