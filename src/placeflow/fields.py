"""The vocabulary every layer shares, and which imports nothing of placeflow but its errors: the
place fields a file maps (and `--map`'s and `--set`'s pairs naming them, read and checked), the
spec's request kinds, attributes and limits, the dedupe modes, batch sizes.

Base module: errors, fields, options, config, events and redact sit below everything else
(the rule of direction is in the package docstring); a name defined here is imported from here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from placeflow.errors import OptionsError

# --- the place fields of a file and a request -----------------------------------------------

PLACE_FIELDS = (
    "poi_name",
    "street",
    "address",
    "city",
    "region",
    "postcode",
    "country",
    "latitude",
    "longitude",
)
MATCH_ONLY_FIELDS = ("phone", "website")
"""Read to tell places apart in the fuzzy dedupe pass (the same phone or web host is strong
evidence, e.g. across two guides' spellings of one restaurant); never sent (a request has no
such fields) and no part of a place's key."""
MAPPABLE = (*PLACE_FIELDS, "id", *MATCH_ONLY_FIELDS)


def split_key(key: str) -> tuple[str | None, str]:
    """A mapping key as (file, field): `FILE:field` applies to one file, `field` to all."""
    prefix, sep, name = key.rpartition(":")
    return (prefix, name) if sep and prefix else (None, key)


def set_pair(text: str, fields: tuple[str, ...]) -> tuple[str, str]:
    """A `--set` argument as (key, value): `FIELD=VALUE`, or `FILE:FIELD=VALUE` whose FILE may
    hold colons and '=' (an s3:// URL): the key ends at the first '=' after one of `fields` at
    the start or after a ':'; the value is the rest, whatever it holds."""
    for field in fields:
        if text.startswith(f"{field}="):
            return field, text[len(field) + 1 :]
    found = re.search(f":({'|'.join(fields)})=", text)
    if found is not None:
        return f"{text[: found.start()]}:{found[1]}", text[found.end() :]
    key, _, value = text.partition("=")
    return key, value


SETTABLE = (*PLACE_FIELDS, *MATCH_ONLY_FIELDS)
"""The fields `--set` gives one value for every row (the user's own id is per row)."""


def mapping_pairs(value: Any) -> tuple[tuple[str, str], ...]:
    """`--map`'s pairs from a dict, pairs, or the CLI's FIELD=COLUMN strings (FIELD= leaves the
    field out): checked, sorted by field."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = []
        for pair in value:
            if isinstance(pair, str):
                field, sep, column = pair.partition("=")
                if not sep:  # FIELD= (no column) leaves the field out
                    raise OptionsError(f"--map takes FIELD=COLUMN or FIELD=, not {pair!r}")
                items.append((field, column))
            else:
                items.append(tuple(pair))
    for key, _ in items:
        if split_key(key)[1] not in MAPPABLE:
            raise OptionsError(f"--map field {key!r} is not one of {', '.join(MAPPABLE)}")
    return tuple(sorted(items))


def constant_pairs(value: Any) -> tuple[tuple[str, str], ...]:
    """`--set`'s pairs from a dict, pairs, or the CLI's FIELD=VALUE strings (`set_pair`):
    checked (a settable field, a value, one value a field), sorted by field."""
    if value is None:
        return ()
    items = list(value.items()) if isinstance(value, Mapping) else [
        set_pair(pair, SETTABLE) if isinstance(pair, str) else tuple(pair) for pair in value
    ]  # fmt: skip
    for key, given in items:
        field = split_key(key)[1]
        if field not in SETTABLE:
            raise OptionsError(f"--set field {field!r} is not one of {', '.join(SETTABLE)}")
        if not str(given).strip():
            raise OptionsError(f"--set {key}= gives no value; write --set {key}=VALUE")
    if len({key for key, _ in items}) < len(items):
        raise OptionsError("--set gives one field more than one value (for one file)")
    return tuple(sorted((key, str(given)) for key, given in items))


# --- the spec's vocabulary ------------------------------------------------------------------

ValueAttribute = Literal[
    "opening_hours", "phone", "website", "facebook", "instagram", "tiktok", "email"
]
"""Enrich attributes that come back as values under `attributes`."""
StatusAttribute = Literal["existence", "open_closed"]
"""Enrich attributes that come back under `status` / `operational_status`."""
EnrichAttribute = Literal[ValueAttribute, StatusAttribute]
"""What `attributes` may name: a closed vocabulary, checked in pydantic's core."""

VALUE_ATTRIBUTES: tuple[str, ...] = get_args(ValueAttribute)
STATUS_ATTRIBUTES: tuple[str, ...] = get_args(StatusAttribute)
ALLOWED_ENRICH_ATTRIBUTES: tuple[str, ...] = get_args(EnrichAttribute)
DEFAULT_ENRICH_ATTRIBUTES: tuple[str, ...] = (
    "opening_hours",
    "phone",
    "website",
    "existence",
    "open_closed",
)
JobKind = Literal["validate", "enrich"]

MAX_ENRICH_BATCH = 10
MAX_JOB_ROWS = 10_000

DedupeMode = Literal["exact", "fuzzy", "off"]
DEFAULT_MATCH_THRESHOLD = 0.99
"""Match probability the fuzzy dedupe needs to merge two places (precision first; the figures
behind it are in bench/RESULTS.md)."""

BATCH_ROWS = 200_000
"""Rows read and normalised at a time: polars holds a few copies of one batch, not of the input."""


# --- the spec's rate limits -----------------------------------------------------------------

Tier = Literal["free", "paid"]

TIER_WINDOWS: dict[str, tuple[tuple[int, float], ...]] = {
    "free": ((5, 1.0), (10, 60.0)),
    "paid": ((10, 1.0), (100, 60.0)),
}
"""The spec's Limits table: (requests, seconds) per window, per tier."""
_UNIT_SECONDS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_WINDOW = re.compile(r"(?P<count>\d+)\s*/\s*(?P<every>\d+(?:\.\d+)?)?\s*(?P<unit>s|sec|m|min|h)")


@dataclass(frozen=True, kw_only=True)
class RateLimits:
    """Windows as (count, seconds) pairs: at most `count` requests in any `seconds` span.

    The server stamps a request when it arrives, and arrival times jitter, so each window is
    kept `slack` of its length longer than stated, and never less than `min_slack` seconds longer.
    """

    windows: tuple[tuple[int, float], ...] = TIER_WINDOWS["paid"]
    slack: float = 0.05
    min_slack: float = 0.05

    def __post_init__(self) -> None:
        if not self.windows:
            raise OptionsError("give at least one (count, seconds) window")
        for count, seconds in self.windows:
            if count < 1 or seconds <= 0:
                raise OptionsError(f"window ({count}, {seconds}) needs count >= 1 and seconds > 0")
        if self.slack < 0 or self.min_slack < 0:
            raise OptionsError("slack and min_slack must not be negative")

    @classmethod
    def for_tier(
        cls,
        tier: Tier | str,
        *,
        window_scale: float = 1.0,
        slack: float = 0.05,
        min_slack: float = 0.05,
    ) -> RateLimits:
        """The spec's limits for `tier`, each window's length multiplied by `window_scale`
        (the sandbox's ``rate_window_scale``, so tests can have a three-second minute)."""
        if tier not in TIER_WINDOWS:
            raise OptionsError(f"tier must be one of {sorted(TIER_WINDOWS)}, not {tier!r}")
        if window_scale <= 0:
            raise OptionsError("window_scale must be positive")
        windows = tuple((n, s * window_scale) for n, s in TIER_WINDOWS[tier])
        return cls(windows=windows, slack=slack, min_slack=min_slack)

    @classmethod
    def parse(cls, text: str) -> RateLimits:
        """Windows written as the spec writes limits: ``10/s,100/min`` (also ``/h``, ``/5s``).

        For keys whose limits differ from their tier's (the spec says keys carry their own)."""
        windows = []
        for part in (p.strip() for p in text.split(",")):
            match = _WINDOW.fullmatch(part)
            if not match:
                raise OptionsError(
                    f"rate limit {part!r} is not COUNT/UNIT (e.g. 10/s, 100/min, 1000/5s)"
                )
            count, every, unit = match.group("count", "every", "unit")
            windows.append((int(count), float(every or 1) * _UNIT_SECONDS[unit]))
        return cls(windows=tuple(windows))

    def spacing(self, seconds: float) -> float:
        """A window's length plus its safety margin."""
        return seconds + max(self.slack * seconds, self.min_slack)
