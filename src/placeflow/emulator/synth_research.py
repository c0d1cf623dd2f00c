"""Deep research rows: each field's value and confidence, the place's identity check, and the
credits a row bills.

A research field named like an enrich attribute (phone, website, ...) takes the value the
enrich tables (`placeflow.emulator.synth_tables`) give it. Research fields are drawn from a
hash of the place's digest and the field's name, so adding or reordering attributes never
changes the other fields of a place. Pure and deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from placeflow.api.models import DeepResearchFieldSpec, DeepResearchPOI, DeepResearchRequest
from placeflow.emulator.synth_tables import place_slug, value_json
from placeflow.fields import VALUE_ATTRIBUTES

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
