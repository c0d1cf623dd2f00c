"""The tables behind synth's outcomes (statuses, attribute values, their JSON fragments).

Enrich and research (`placeflow.emulator.synth_research`) share the value generators, so a
research field named like an enrich attribute (phone, website, ...) finds the same value. Pure
and deterministic.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from placeflow.api.models import (
    CLOSURE_REASONS,
    OPERATIONAL_STATUSES,
    WEEKDAYS,
)
from placeflow.fields import VALUE_ATTRIBUTES


def compact(obj: object) -> str:
    """Compact JSON, as every result line is written."""
    return json.dumps(obj, separators=(",", ":"))


def byte_table(weights: Sequence[int]) -> bytes:
    """256 entries, index i repeated weights[i] times: a byte drawn uniformly picks i by weight."""
    assert sum(weights) == 256
    return bytes(i for i, w in enumerate(weights) for _ in range(w))


# --- operational status, by draw byte -----------------------------------------------------
assert OPERATIONAL_STATUSES == ("open", "closed", "unknown", "not_exists")
STATUS_OF = byte_table((200, 26, 20, 10))  # open 78%, closed 10%, unknown 8%, not_exists 4%
REASON_OF = byte_table((100, 52, 31, 26, 21, 26))  # in CLOSURE_REASONS order


def _scale(lo: float, hi: float) -> list[float]:
    return [round(lo + (hi - lo) * b / 255, 2) for b in range(256)]


EXISTENCE = [_scale(0.75, 0.99), _scale(0.6, 0.99), _scale(0.3, 0.85), _scale(0.0, 0.29)]
EXISTENCE_JSON = [[repr(v) for v in row] for row in EXISTENCE]
OP_JSON: list[list[list[str]]] = [
    [
        [
            compact({"status": "open", "closure_confidence": c, "closure_reason": None})
            for c in _scale(0.0, 0.3)
        ]
    ],
    [
        [
            compact({"status": "closed", "closure_confidence": c, "closure_reason": r})
            for c in _scale(0.55, 0.99)
        ]
        for r in CLOSURE_REASONS
    ],
    [
        [
            compact({"status": "unknown", "closure_confidence": c, "closure_reason": None})
            for c in _scale(0.0, 0.3)
        ]
    ],
    [[compact({"status": "not_exists", "closure_confidence": None, "closure_reason": None})] * 256],
]


# --- attribute values (enrich and research) ------------------------------------------------
_NULL_SHARE = (0.20, 0.10, 0.15, 0.40, 0.55, 0.80, 0.50)  # in VALUE_ATTRIBUTES order


def _presence(null_share: float) -> tuple[str | None, ...]:
    """Confidence by draw byte: None (no value) for the null share, then high/medium/low 5:3:2."""
    cut = round(null_share * 256)
    levels = byte_table((128, 77, 51))
    names = ("high", "medium", "low")
    return tuple(
        None if b < cut else names[levels[(b - cut) * 256 // (256 - cut)]] for b in range(256)
    )


ATTR_PRESENCE = [_presence(s) for s in _NULL_SHARE]
ATTR_KEY = [f'"{a}":{{"value":' for a in VALUE_ATTRIBUTES]
ATTR_NULL = [f'{k}null,"as_of":null,"confidence":null}}' for k in ATTR_KEY]
ATTR_NULL_CELL = [f'{k}null,"confidence":null,"status":"unconfirmed"}}' for k in ATTR_KEY]
ATTR_CELL_TAIL = {  # estimated always has low confidence
    c: f',"confidence":"{c}","status":"{"estimated" if c == "low" else "confirmed"}"}}'
    for c in ("high", "medium", "low")
}
_HOURS_PATTERNS = (  # monday..sunday; "a-b,c-d" is a split shift
    ("09:00-17:00",) * 5 + ("closed", "closed"),
    ("09:00-18:00",) * 5 + ("10:00-16:00", "closed"),
    ("10:00-20:00",) * 6 + ("12:00-17:00",),
    ("closed",) + ("11:30-14:30,17:30-22:00",) * 6,
    ("11:00-22:00",) * 4 + ("11:00-23:00",) * 2 + ("12:00-21:00",),
    ("07:00-15:00",) * 7,
    ("08:00-12:00,13:00-17:30",) * 5 + ("08:00-12:00", "closed"),
    ("00:00-23:59",) * 7,
    ("06:30-21:00",) * 5 + ("08:00-21:00", "08:00-20:00"),
    ("closed", "closed") + ("17:00-23:00",) * 3 + ("12:00-15:00,17:00-23:30",) * 2,
    ("08:30-19:00",) * 6 + ("closed",),
    (
        "10:00-18:00",
        "10:00-18:00",
        "closed",
        "10:00-18:00",
        "10:00-20:00",
        "10:00-20:00",
        "11:00-17:00",
    ),
)
_HOURS_JSON = [
    compact(
        {
            "days": {
                day: "closed"
                if spec == "closed"
                else [
                    dict(zip(("open", "close"), s.split("-"), strict=True)) for s in spec.split(",")
                ]
                for day, spec in zip(WEEKDAYS, p, strict=True)
            }
        }
    )
    for p in _HOURS_PATTERNS
]
_COUNTRIES: dict[str, tuple[str, int, str]] = {  # calling code, national digits, web domain
    "US": ("1", 10, "com"),
    "CA": ("1", 10, "ca"),
    "GB": ("44", 10, "co.uk"),
    "IE": ("353", 9, "ie"),
    "DE": ("49", 10, "de"),
    "AT": ("43", 10, "at"),
    "CH": ("41", 9, "ch"),
    "FR": ("33", 9, "fr"),
    "BE": ("32", 9, "be"),
    "NL": ("31", 9, "nl"),
    "LU": ("352", 8, "lu"),
    "ES": ("34", 9, "es"),
    "PT": ("351", 9, "pt"),
    "IT": ("39", 10, "it"),
    "DK": ("45", 8, "dk"),
    "SE": ("46", 9, "se"),
    "NO": ("47", 8, "no"),
    "FI": ("358", 9, "fi"),
    "PL": ("48", 9, "pl"),
    "CZ": ("420", 9, "cz"),
    "GR": ("30", 10, "gr"),
    "TR": ("90", 10, "com.tr"),
    "AU": ("61", 9, "com.au"),
    "NZ": ("64", 9, "co.nz"),
    "JP": ("81", 10, "jp"),
    "KR": ("82", 9, "kr"),
    "SG": ("65", 8, "sg"),
    "IN": ("91", 10, "in"),
    "MX": ("52", 10, "mx"),
    "BR": ("55", 11, "com.br"),
    "AR": ("54", 10, "com.ar"),
    "ZA": ("27", 9, "co.za"),
    "AE": ("971", 9, "ae"),
    "IL": ("972", 9, "co.il"),
}
_DEFAULT_COUNTRY = "US"  # no country, or one not listed: +1 and .com
_PHONE_WEB = {  # country code in either case -> (phone JSON up to the national number,
    # the national number's modulus and offset, web domain)
    case: (f'{{"number":"+{code}', 8 * 10 ** (digits - 1), 2 * 10 ** (digits - 1), tld)
    for cc, (code, digits, tld) in _COUNTRIES.items()
    for case in (cc, cc.lower())
}
_NOT_SLUG = bytes(b for b in range(256) if not (48 <= b <= 57 or 97 <= b <= 122))


def place_slug(name: str, h: bytes) -> str:
    """The name as a web slug: accents dropped, lower-case letters and digits only."""
    raw = unicodedata.normalize("NFKD", name) if not name.isascii() else name
    slug = raw.encode("ascii", "ignore").lower().translate(None, _NOT_SLUG)[:30].decode()
    return slug or f"place{h[24:27].hex()}"


def value_json(i: int, h: bytes, country: str | None, slug: str, social: str = "object") -> str:
    """The compact JSON of VALUE_ATTRIBUTES[i]'s value for the place of draw digest `h`
    (`slug` from place_slug, needed from website on); `social` the shape of instagram's and
    tiktok's (SynthSettings.social_value_shape)."""
    if i == 0:
        return _HOURS_JSON[h[23] % len(_HOURS_JSON)]
    web = _PHONE_WEB.get(country or "")
    if web is None:
        web = _PHONE_WEB.get(str(country).upper(), _PHONE_WEB[_DEFAULT_COUNTRY])
    phone, modulus, offset, tld = web
    if i == 1:  # a national number whose first digit is 2-9
        return f'{phone}{int.from_bytes(h[24:29]) % modulus + offset}"}}'
    if i == 2:
        return f'{{"url":"https://{"www." if h[29] & 4 else ""}{slug}.{tld}"}}'
    if i == 6:
        return f'{{"email":"info@{slug}.{tld}"}}'
    # instagram and tiktok value shapes are "not shown" in the spec: by default the same
    # {url, handle} as facebook (docs/spec-readings.md, 19)
    handle = slug if h[29] & 3 else slug + "official"
    url = ("https://www.facebook.com/", "https://www.instagram.com/", "https://www.tiktok.com/@")
    if i == 3 or social == "object":
        return f'{{"url":"{url[i - 3]}{handle}","handle":"{handle}"}}'
    return f'"{url[i - 3]}{handle}"' if social == "url" else f'"@{handle}"'


def summary_sentence(poi: Mapping[str, Any], status: str, closure_reason: str | None) -> str:
    """A short place_summary from the name, the city and the operational status."""
    name = " ".join(str(poi.get("poi_name") or "This place").split())
    city = " ".join(str(poi.get("city") or "").split())
    where = f" in {city}" if city else ""
    if status == "open":
        return f"{name}{where} appears to be open and trading, with recent activity found online."
    if status == "closed":
        why = f" ({closure_reason})" if closure_reason not in (None, "unspecified") else ""
        return f"{name}{where} appears to have closed{why}."
    if status == "unknown":
        return f"The current operating status of {name}{where} could not be determined."
    return f"No evidence was found that {name} exists at the given location{where}."
