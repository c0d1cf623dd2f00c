"""The tables behind synth's outcomes (statuses, attribute values, their JSON fragments), and
deep research rows.

Enrich and research share the value generators, so a research field named like an enrich
attribute (phone, website, ...) finds the same value. Research fields are drawn from a hash of the
place's digest and the field's name, so adding or reordering attributes never changes the other
fields of a place. Pure and deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from placeflow.api.models import (
    CLOSURE_REASONS,
    OPERATIONAL_STATUSES,
    WEEKDAYS,
    DeepResearchFieldSpec,
    DeepResearchPOI,
    DeepResearchRequest,
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


# --- deep research ------------------------------------------------------------------------
ROW_ERROR = "research failed for this place: sources did not answer in time; retry the place"
_FIRST = (
    "Maria",
    "James",
    "Aisha",
    "Wei",
    "Carlos",
    "Sofia",
    "David",
    "Priya",
    "Liam",
    "Yuki",
    "Fatima",
    "Noah",
    "Elena",
    "Omar",
    "Grace",
    "Mateo",
)
_LAST = (
    "Lopez",
    "Smith",
    "Khan",
    "Chen",
    "Garcia",
    "Rossi",
    "Cohen",
    "Patel",
    "Murphy",
    "Sato",
    "Haddad",
    "Nguyen",
    "Novak",
    "Okafor",
    "Schmidt",
    "Silva",
)
_ORG_SUFFIX = (
    "Hospitality Group LLC",
    "Holdings Inc.",
    "Restaurant Group",
    "Retail Partners Ltd",
    "Enterprises LLC",
    "Brands Co.",
)
_NAME_SUFFIX = ("Cafe", "Kitchen", "Market", "Bakery", "Studio", "Express")
_OWNER_NAMES = ("owner_person", "owner_org")


@dataclass(frozen=True)
class Place:
    """A place to research with what synth already drew for it."""

    poi: DeepResearchPOI
    digest: bytes
    exists: bool
    existence_confidence: float
    salt: bytes
    """The seed's salt, for draws that must not depend on the place's formatting."""


def _cell(value: Any, confidence: str | None) -> dict[str, Any]:
    """A ResultCell: confirmed (high/medium), estimated (always low), unconfirmed (no value)."""
    if value is None or confidence is None:
        return {"value": None, "confidence": None, "status": "unconfirmed"}
    status = "estimated" if confidence == "low" else "confirmed"
    return {"value": value, "confidence": confidence, "status": status}


_ABSTAIN = _cell(None, None)


def _confidence(b: int) -> str | None:
    """confirmed-high 35%, confirmed-medium 22%, estimated-low 18%, abstain 25%."""
    return "high" if b < 90 else "medium" if b < 146 else "low" if b < 192 else None


def _value(spec: DeepResearchFieldSpec, place: Place, a: bytes) -> Any:
    """A plausible value of the spec's type (inferred from the name when not given); a field
    named like an enrich attribute gets the enrich value (its string when value_type is string)."""
    name = spec.name.lower()
    kind = spec.value_type or ("enum" if spec.allowed_values else "string")
    if kind == "string" and name.startswith(("has_", "is_", "accepts_", "offers_", "allows_")):
        kind = "bool"
    n = int.from_bytes(a[1:5])
    if kind == "bool":
        return bool(n & 1)
    if kind == "enum" and spec.allowed_values:
        return spec.allowed_values[n % len(spec.allowed_values)]
    if kind == "number":
        if "year" in name:
            return 1950 + n % 75
        if "rating" in name or "score" in name:
            return round(1 + (n % 41) / 10, 1)
        return 1 + n % 500
    if name in VALUE_ATTRIBUTES:
        country = place.poi.country
        slug = place_slug(place.poi.poi_name, place.digest)
        value = json.loads(value_json(VALUE_ATTRIBUTES.index(name), place.digest, country, slug))
        first = next(iter(value.values()))
        return first if spec.value_type == "string" and isinstance(first, str) else value
    slug = place_slug(place.poi.poi_name, place.digest)
    if "email" in name:
        return f"info@{slug}.com"
    if "phone" in name:
        return f"+1{2 + n % 8}{n // 8 % 10**9:09d}"
    if "website" in name or "url" in name:
        return f"https://www.{slug}.com"
    return f"{spec.name.replace('_', ' ')}: sandbox value {a[1:4].hex()}"


def _owner(name: str, place: Place, r: bytes) -> str | None:
    """The established owner of the requested kind, or None (abstain): a place has a person
    owner (45%), an organisation (30%) or neither found (25%), never both."""
    kind = "owner_person" if r[2] < 115 else "owner_org" if r[2] < 192 else None
    if kind != name:
        return None
    if name == "owner_person":
        people = [f"{_FIRST[r[8 + k] % 16]} {_LAST[r[10 + k] % 16]}" for k in (0, 1)]
        return ", ".join(people if r[12] < 40 else people[:1])
    base = _LAST[r[10] % 16] if r[13] & 1 else " ".join(place.poi.poi_name.split())
    return f"{base} {_ORG_SUFFIX[r[14] % len(_ORG_SUFFIX)]}"


def _existence_cell(place: Place) -> dict[str, Any]:
    ec = place.existence_confidence
    if place.exists:
        return _cell(True, "high" if ec >= 0.8 else "medium" if ec >= 0.6 else "low")
    return _cell(False, "medium" if ec < 0.15 else "low")


def _address(poi: DeepResearchPOI) -> str | None:
    if poi.address and poi.address.strip():
        return poi.address
    parts = [p for p in (poi.street, poi.city, poi.region, poi.postcode, poi.country) if p]
    return ", ".join(parts) or None


_ABBREVIATIONS = {
    "st": "street",
    "ave": "avenue",
    "rd": "road",
    "blvd": "boulevard",
    "dr": "drive",
    "ln": "lane",
    "n": "north",
    "s": "south",
    "e": "east",
    "w": "west",
}
_LEGAL_FORMS = frozenset({"inc", "ltd", "llc", "co", "corp", "gmbh", "plc"})


def _identity_key(text: str | None) -> str:
    """Text with the formatting differences that are no correction folded away: punctuation,
    casing, and vs &, St vs Street, added or dropped Inc/Ltd/LLC."""
    s = re.sub(r"['\u2019.]", "", (text or "").lower().replace("&", " and "))
    words = re.sub(r"[^\w\s]", " ", s).split()
    return " ".join(_ABBREVIATIONS.get(w, w) for w in words if w not in _LEGAL_FORMS)


def _identity(place: Place, agent_available: bool) -> dict[str, Any]:
    """Name and address verdicts, drawn from their formatting-free keys: formatting variants get
    the same verdict, and confirmed keeps each caller's own string; unresolved returns the
    caller's value untouched."""
    poi, address = place.poi, _address(place.poi)
    key = f"{_identity_key(poi.poi_name)}\0{_identity_key(address)}".encode()
    i = hashlib.blake2b(key, digest_size=16, salt=place.salt).digest()
    name_verdict = "confirmed" if i[0] < 205 else "corrected" if i[0] < 236 else "unresolved"
    addr_verdict = "confirmed" if i[1] < 192 else "corrected" if i[1] < 218 else "unresolved"
    if not agent_available:
        name_verdict = addr_verdict = "unresolved"
    name_value = poi.poi_name
    if name_verdict == "corrected":  # the business publishes a longer name
        fresh = (s for s in _NAME_SUFFIX[i[2] % 3 :] if s.lower() not in name_value.lower())
        suffix = next(fresh, "Group")
        name_value = f"{' '.join(poi.poi_name.split())} {suffix}"
    addr_value = address
    number = re.search(r"\d+", address or "")
    if address is None or (addr_verdict == "corrected" and number is None):
        addr_verdict = "unresolved"
    elif addr_verdict == "corrected" and number is not None:  # another door number
        door = str(int(number.group()) + 1 + i[3] % 20)
        addr_value = address[: number.start()] + door + address[number.end() :]
    return {
        "name": {"value": name_value, "verdict": name_verdict, "original": poi.poi_name},
        "address": {"value": addr_value, "verdict": addr_verdict, "original": address},
    }


def research_estimate(request: DeepResearchRequest) -> int:
    """Credits the up-front estimate names: processed places x (attributes + existence), plus
    one per row for verify_identity."""
    places = len(request.pois[: request.sample] if request.sample else request.pois)
    per_row = len(request.attributes) + request.validate_existence + request.verify_identity
    return places * per_row


def research_row(
    place: Place, request: DeepResearchRequest, *, fail_rate: float, agent_available: bool
) -> tuple[dict[str, Any], int]:
    """One DeepResearchRow dict and the credits it bills (0 for an error or when research is
    unavailable; else 1 per attribute, existence included, + 1 for verify_identity)."""
    r = hashlib.blake2b(b"row", digest_size=16, key=place.digest).digest()
    poi = place.poi
    row: dict[str, Any] = {"id": poi.id, "poi_name": poi.poi_name}
    failed = agent_available and (r[0] << 8 | r[1]) < round(fail_rate * 65536)
    if request.verify_identity:
        row["identity"] = None if failed else _identity(place, agent_available)
    if failed:
        row.update(status="error", outcome=None, fields=None, error=ROW_ERROR)
        return row, 0
    fields: dict[str, dict[str, Any]] = {}
    for spec in request.attributes:
        if not agent_available:
            fields[spec.name] = dict(_ABSTAIN)
            continue
        a = hashlib.blake2b(spec.name.encode(), digest_size=16, key=place.digest).digest()
        confidence = _confidence(a[0]) if place.exists else None
        if spec.name in _OWNER_NAMES:
            fields[spec.name] = _cell(_owner(spec.name, place, r), confidence)
        else:
            fields[spec.name] = _cell(_value(spec, place, a) if confidence else None, confidence)
    if request.validate_existence:
        fields["existence"] = _existence_cell(place) if agent_available else dict(_ABSTAIN)
    enriched = any(cell["status"] == "confirmed" for cell in fields.values())
    outcome = "enriched" if enriched else "abstain"
    row.update(status=outcome, outcome=outcome, fields=fields, error=None)
    if not agent_available:
        return row, 0
    per_row = len(request.attributes) + request.validate_existence + request.verify_identity
    return row, per_row
