"""The draws behind the sandbox's outcomes: a place's fingerprint, one keyed hash of it per call.

Every draw comes from one 32-byte blake2b of a place's fingerprint, salted with the seed, so the
same place, seed and epoch always give the same bytes and the client's `id` never changes them.
`CallContext` holds what every row of one call shares (salt, epoch, cut-offs, the JSON tails of
its lines); synth turns the bytes into result lines.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any

from placeflow.emulator.synth_tables import compact


@dataclass(frozen=True)
class SynthSettings:
    seed: int = 0
    epoch: int = 0
    """A later epoch redraws about 5% more places, so a refresh sees places change."""
    fail_rate: float = 0.01
    """Share of rows that fail (success false, EXTERNAL_API_ERROR); failed rows are free."""
    null_status_rate: float = 0.0
    """Share of successful enrich rows whose status object has every value null."""
    bill_null_status: bool = True
    """Whether a bulk enrich row whose only non-null part is an all-null status is billed."""
    social_value_shape: str = "object"
    """instagram and tiktok values: object {url, handle}, or a plain string (url, handle)."""
    unknown_fields: bool = False
    """Result lines carry fields the spec never names: at the top, inside status objects, and a
    status of only such a field where the spec's answer has none (billing is the spec's)."""
    nul_in_phone_rate: float = 0.0
    """Share of phone values whose number holds a NUL byte (draw byte 31)."""

    def __post_init__(self) -> None:
        if self.social_value_shape not in SOCIAL_VALUE_SHAPES:
            raise ValueError(
                f"social_value_shape is one of {', '.join(SOCIAL_VALUE_SHAPES)},"
                f" not {self.social_value_shape!r}"
            )


SOCIAL_VALUE_SHAPES = ("object", "url", "handle")


# One 32-byte blake2b per place (16 bytes cannot hold enrich's ~30 independent draws; 32 cost the
# same single compression). Base digest: 0-1 epoch offset, 2 coordinate resolvability. Draw
# digest (the base one unless the epoch moved the place on): 3-4 failure, 5 status, 6 closure
# reason, 7 closure confidence, 8 existence confidence, 9-15 presence and confidence of each
# VALUE_ATTRIBUTE, 16-22 their as_of, 23 hours pattern, 24-28 phone digits, 29 web variant,
# 30 null status, 31 a NUL in the phone number.
_EPOCH_STEP = 3277
"""An epoch moves on the places whose 16-bit offset crosses a multiple of 65536: 3277/65536 = 5%."""
_UNRESOLVABLE_CUT = 8  # of 256: about 3% of coordinates-only places
_NAN = float("nan")

_IDENTITY = ("poi_name", "street", "city", "region", "postcode", "country", "address")
_get_identity = itemgetter(*_IDENTITY, "latitude", "longitude")
_pack_coordinates = struct.Struct("<dd").pack


def place_fingerprint(poi: Mapping[str, Any]) -> bytes:
    """A place's identity: name and address fields lower-cased and whitespace-folded, then the
    coordinates as given (missing ones as NaN); never the client's `id`."""
    try:
        name, street, city, region, postcode, country, address, lat, lon = _get_identity(poi)
    except KeyError:
        name, street, city, region, postcode, country, address = map(poi.get, _IDENTITY)
        lat, lon = poi.get("latitude"), poi.get("longitude")
    text = (
        f"{name or ''}\0{street or ''}\0{city or ''}\0{region or ''}\0{postcode or ''}\0"
        f"{country or ''}\0{address or ''}\0"
    )
    folded = " ".join(text.lower().split())
    if " \0" in folded or "\0 " in folded:  # a field with leading or trailing whitespace
        folded = folded.replace("\0 ", "\0").replace(" \0", "\0")
    return folded.encode("utf-8", "surrogatepass") + _pack_coordinates(
        _NAN if lat is None else lat, _NAN if lon is None else lon
    )


def salt(seed: int) -> bytes:
    """The 16-byte salt of a seed's keyed hash."""
    return hashlib.blake2b(repr(seed).encode(), digest_size=16).digest()


class _Dates(dict[int, str]):
    """',"as_of":"<date>","confidence":"' by draw byte, the date 0-364 days before `now`,
    computed on first use."""

    def __init__(self, now: str) -> None:
        super().__init__()
        self.now = now

    def __missing__(self, b: int) -> str:
        today = date.fromisoformat(self.now[:10]).toordinal()
        as_of = date.fromordinal(today - (b * 365 >> 8)).isoformat()
        text = self[b] = f',"as_of":"{as_of}","confidence":"'
        return text


class CallContext:
    """What every row of one call shares: the salt, the epoch, the cut-offs and the tails."""

    def __init__(self, settings: SynthSettings, now: str, request_id: str | None) -> None:
        self.salt = salt(settings.seed)
        self.hasher = hashlib.blake2b(digest_size=32, salt=self.salt)  # copied: kwargs are slow
        self.epoch_step = settings.epoch * _EPOCH_STEP
        self.fail_cut = round(min(max(settings.fail_rate, 0.0), 1.0) * 65536)
        self.null_cut = round(min(max(settings.null_status_rate, 0.0), 1.0) * 256)
        self.bill_null = settings.bill_null_status
        self.social_shape = settings.social_value_shape
        self.unknown = settings.unknown_fields
        self.nul_cut = round(min(max(settings.nul_in_phone_rate, 0.0), 1.0) * 256)
        self.dates = _Dates(now)
        rid, failed = request_id, ("upstream lookup failed", "EXTERNAL_API_ERROR")
        unresolved = (
            "coordinates could not be resolved to a location; add an address or city",
            "VALIDATION_ERROR",
        )
        self.v_ok = tail(error=None, error_code=None, request_id=rid, validation_timestamp=now)
        self.v_fail = tail(
            existence_confidence=None,
            operational_status=None,
            error=failed[0],
            error_code=failed[1],
            request_id=rid,
            validation_timestamp=now,
        )
        self.e_ok = tail(enrichment_timestamp=now, error=None, error_code=None, request_id=rid)
        self.e_fail, self.e_unresolved = (
            tail(
                attributes=None,
                status=None,
                operational_status=None,
                place_summary=None,
                enrichment_timestamp=now,
                error=error,
                error_code=code,
                request_id=rid,
            )
            for error, code in (failed, unresolved)
        )

    def digests(self, fp: bytes) -> tuple[bytes, bytes]:
        """The place's base digest and its draw digest for this epoch."""
        hasher = self.hasher.copy()
        hasher.update(fp)
        base = hasher.digest()
        gen = (self.epoch_step + (base[0] << 8 | base[1])) >> 16
        if not gen:
            return base, base
        person = gen.to_bytes(16, "little", signed=True)
        return base, hashlib.blake2b(fp, digest_size=32, salt=self.salt, person=person).digest()


def tail(**fields: Any) -> str:
    """The rest of a line from its first field after `id`: ',"a":1,"b":null}'."""
    return "," + compact(fields)[1:]


def id_json(value: Any) -> str:
    """The client's `id` as JSON, echoed as given."""
    if value is None:
        return "null"
    return encode_basestring_ascii(value) if isinstance(value, str) else compact(value)


def unresolvable(poi: Mapping[str, Any], base: bytes) -> bool:
    """Whether coordinates-only, this place would be unresolvable: (0, 0) and ~3% of places."""
    return base[2] < _UNRESOLVABLE_CUT or (poi.get("latitude") == 0 and poi.get("longitude") == 0)
