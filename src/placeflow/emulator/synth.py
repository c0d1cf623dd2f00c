"""Deterministic outcomes of the place endpoints for the sandbox: validate, enrich, bulk files.

Every draw comes from one keyed hash of a place's fingerprint (blake2b, salted with the seed), so
the same place, seed and epoch always give the same outcome and the client's `id` never changes
it. Result lines are assembled from JSON fragments serialised once at import (no json.dumps per
row), so a bulk file renders at around 10^5 rows/s; `validate_outcome` / `enrich_outcome` return
those very lines parsed, so a single-place answer and a job file line can never disagree. The
tables, the attribute values and the deep research rows live in synth_research.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any, Literal

from placeflow.api.models import (
    CLOSURE_REASONS,
    DEFAULT_ENRICH_ATTRIBUTES,
    OPERATIONAL_STATUSES,
    VALUE_ATTRIBUTES,
    DeepResearchRequest,
)
from placeflow.emulator.synth_research import (
    ATTR_CELL_TAIL,
    ATTR_KEY,
    ATTR_NULL,
    ATTR_NULL_CELL,
    ATTR_PRESENCE,
    EXISTENCE,
    EXISTENCE_JSON,
    OP_JSON,
    REASON_OF,
    STATUS_OF,
    Place,
    compact,
    place_slug,
    research_row,
    summary_sentence,
    value_json,
)
from placeflow.emulator.synth_research import research_estimate as research_estimate  # re-export


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


@dataclass(frozen=True)
class JobTally:
    rows: int
    succeeded: int
    failed: int
    billable: int


# --- draws -------------------------------------------------------------------------------
# One 32-byte blake2b per place (16 bytes cannot hold enrich's ~30 independent draws; 32 cost the
# same single compression). Base digest: 0-1 epoch offset, 2 coordinate resolvability. Draw
# digest (the base one unless the epoch moved the place on): 3-4 failure, 5 status, 6 closure
# reason, 7 closure confidence, 8 existence confidence, 9-15 presence and confidence of each
# VALUE_ATTRIBUTE, 16-22 their as_of, 23 hours pattern, 24-28 phone digits, 29 web variant,
# 30-31 spare.
_EPOCH_STEP = 3277
"""An epoch moves on the places whose 16-bit offset crosses a multiple of 65536: 3277/65536 = 5%."""
_UNRESOLVABLE_CUT = 8  # of 256: about 3% of coordinates-only places
_CLOSED, _NOT_EXISTS = 1, 3  # indices into OPERATIONAL_STATUSES
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
    text = (f"{name or ''}\0{street or ''}\0{city or ''}\0{region or ''}\0{postcode or ''}\0"
            f"{country or ''}\0{address or ''}\0")
    folded = " ".join(text.lower().split())
    if " \0" in folded or "\0 " in folded:  # a field with leading or trailing whitespace
        folded = folded.replace("\0 ", "\0").replace(" \0", "\0")
    return folded.encode("utf-8", "surrogatepass") + _pack_coordinates(
        _NAN if lat is None else lat, _NAN if lon is None else lon
    )


def _salt(seed: int) -> bytes:
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


class _Ctx:
    """What every row of one call shares: the salt, the epoch, the cut-offs and the tails."""

    def __init__(self, settings: SynthSettings, now: str, request_id: str | None) -> None:
        self.salt = _salt(settings.seed)
        self.hasher = hashlib.blake2b(digest_size=32, salt=self.salt)  # copied: kwargs are slow
        self.epoch_step = settings.epoch * _EPOCH_STEP
        self.fail_cut = round(min(max(settings.fail_rate, 0.0), 1.0) * 65536)
        self.null_cut = round(min(max(settings.null_status_rate, 0.0), 1.0) * 256)
        self.bill_null = settings.bill_null_status
        self.dates = _Dates(now)
        rid, failed = request_id, ("upstream lookup failed", "EXTERNAL_API_ERROR")
        unresolved = ("coordinates could not be resolved to a location; add an address or city",
                      "VALIDATION_ERROR")
        self.v_ok = _tail(error=None, error_code=None, request_id=rid, validation_timestamp=now)
        self.v_fail = _tail(existence_confidence=None, operational_status=None, error=failed[0],
                            error_code=failed[1], request_id=rid, validation_timestamp=now)
        self.e_ok = _tail(enrichment_timestamp=now, error=None, error_code=None, request_id=rid)
        self.e_fail, self.e_unresolved = (
            _tail(attributes=None, status=None, operational_status=None, place_summary=None,
                  enrichment_timestamp=now, error=error, error_code=code, request_id=rid)
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


def _tail(**fields: Any) -> str:
    """The rest of a line from its first field after `id`: ',"a":1,"b":null}'."""
    return "," + compact(fields)[1:]


def _id_json(value: Any) -> str:
    if value is None:
        return "null"
    return encode_basestring_ascii(value) if isinstance(value, str) else compact(value)


# --- validate ----------------------------------------------------------------------------


def _status_fragments(h: bytes) -> tuple[int, str, str]:
    """(status index, existence_confidence JSON, operational_status JSON) of a draw digest."""
    st = STATUS_OF[h[5]]
    op = OP_JSON[st][REASON_OF[h[6]] if st == _CLOSED else 0][h[7]]
    return st, EXISTENCE_JSON[st][h[8]], op


def _validate_line(c: _Ctx, poi: Mapping[str, Any]) -> tuple[str, bool]:
    _, h = c.digests(place_fingerprint(poi))
    idj = _id_json(poi.get("id"))
    if (h[3] << 8 | h[4]) < c.fail_cut:
        return f'{{"success":false,"id":{idj}{c.v_fail}', False
    _, ec, op = _status_fragments(h)
    return (f'{{"success":true,"id":{idj},"existence_confidence":{ec},"operational_status":{op}'
            f"{c.v_ok}"), True


# --- enrich ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Plan:
    attrs: tuple[tuple[int, tuple[str | None, ...], str, str], ...]
    """Per requested value attribute, in request order without repeats: its index in
    VALUE_ATTRIBUTES, its confidence by draw byte, its key fragment and its null result."""
    existence: bool
    open_closed: bool
    cell: bool


def _plan(attributes: Sequence[str] | None, response_format: str | None) -> _Plan:
    wanted = tuple(attributes) if attributes else DEFAULT_ENRICH_ATTRIBUTES
    cell = response_format == "cell"
    nulls = ATTR_NULL_CELL if cell else ATTR_NULL
    indices = [VALUE_ATTRIBUTES.index(a) for a in dict.fromkeys(wanted) if a in VALUE_ATTRIBUTES]
    attrs = tuple((i, ATTR_PRESENCE[i], ATTR_KEY[i], nulls[i]) for i in indices)
    return _Plan(attrs, "existence" in wanted, "open_closed" in wanted, cell)


def _coordinates_only(poi: Mapping[str, Any]) -> bool:
    """Latitude and longitude given, and no street, city, region, postcode or address."""
    g = poi.get
    if g("latitude") is None or g("longitude") is None:
        return False
    where = f"{g('street') or ''}{g('city') or ''}{g('region') or ''}{g('postcode') or ''}"
    return not (where + str(g("address") or "")).strip()


def _enrich_line(c: _Ctx, poi: Mapping[str, Any], plan: _Plan) -> tuple[str, bool, bool]:
    """(line, succeeded, billable) of one enrich row."""
    base, h = c.digests(place_fingerprint(poi))
    g = poi.get
    idj = _id_json(g("id"))
    if _unresolvable(poi, base) and _coordinates_only(poi):
        return f'{{"success":false,"id":{idj}{c.e_unresolved}', False, False
    if (h[3] << 8 | h[4]) < c.fail_cut:
        return f'{{"success":false,"id":{idj}{c.e_fail}', False, False
    st, ec, op = _status_fragments(h)
    null_status = h[30] < c.null_cut  # a status object present, every value in it null
    if null_status:
        ec, op = "null", "null"
    parts = []
    any_value, cell, dates, slug, country = False, plan.cell, c.dates, "", g("country")
    exists = st != _NOT_EXISTS  # nothing is found for a place that does not exist
    for i, presence, key, null in plan.attrs:
        conf = presence[h[9 + i]] if exists else None
        if conf is None:
            parts.append(null)
            continue
        any_value = True
        if i >= 2 and not slug:
            slug = place_slug(str(g("poi_name") or ""), h)
        value = value_json(i, h, country, slug)
        if cell:
            parts.append(key + value + ATTR_CELL_TAIL[conf])
        else:
            parts.append(f'{key}{value}{dates[h[16 + i]]}{conf}"}}')
    status = f'{{"existence_confidence":{ec}}}' if plan.existence else "null"
    summary = "null"
    if g("include_summary"):
        reason = CLOSURE_REASONS[REASON_OF[h[6]]] if st == _CLOSED else None
        summary = encode_basestring_ascii(summary_sentence(poi, OPERATIONAL_STATUSES[st], reason))
    line = (f'{{"success":true,"id":{idj},"attributes":{{{",".join(parts)}}},"status":{status},'
            f'"operational_status":{op if plan.open_closed else "null"},"place_summary":{summary}'
            f"{c.e_ok}")
    if null_status:
        return line, True, any_value or (plan.existence and c.bill_null)
    return line, True, any_value or plan.existence or plan.open_closed


def _unresolvable(poi: Mapping[str, Any], base: bytes) -> bool:
    """Whether coordinates-only, this place would be unresolvable: (0, 0) and ~3% of places."""
    return base[2] < _UNRESOLVABLE_CUT or (poi.get("latitude") == 0 and poi.get("longitude") == 0)


# --- public ------------------------------------------------------------------------------


def _parsed(line: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(line)
    return result


def validate_outcome(
    poi: Mapping[str, Any], *, settings: SynthSettings, now: str, request_id: str | None = None
) -> dict[str, Any]:
    """The POIValidateResponse of one place, as a plain dict."""
    line, _ = _validate_line(_Ctx(settings, now, request_id), poi)
    return _parsed(line)


def enrich_outcome(
    poi: Mapping[str, Any], *, settings: SynthSettings, now: str, request_id: str | None = None
) -> dict[str, Any]:
    """The POIEnrichResponse of one place (an unresolvable coordinates-only place fails with
    VALIDATION_ERROR), as a plain dict."""
    plan = _plan(poi.get("attributes"), poi.get("response_format"))
    line, _, _ = _enrich_line(_Ctx(settings, now, request_id), poi, plan)
    return _parsed(line)


def unresolvable_coordinates(poi: Mapping[str, Any], *, settings: SynthSettings) -> bool:
    """True for a coordinates-only place the service cannot resolve: (0, 0) and about 3% of
    the rest, whatever the epoch."""
    if not _coordinates_only(poi):
        return False
    base = hashlib.blake2b(place_fingerprint(poi), digest_size=32, salt=_salt(settings.seed))
    return _unresolvable(poi, base.digest())


def is_billable(
    kind: Literal["validate", "enrich"],
    result: Mapping[str, Any],
    *,
    null_status_billed: bool = True,
) -> bool:
    """The bulk rule: a row is charged when it succeeded with a value or a non-null status.

    `null_status_billed` picks the reading of "non-null status" for a status object whose
    every value is null: billed (the object is not null, the sandbox's default) or not."""
    if not result.get("success"):
        return False
    if kind == "validate":
        return (result.get("operational_status") is not None
                or result.get("existence_confidence") is not None)
    attributes = result.get("attributes") or {}
    status = result.get("status")
    if not null_status_billed and isinstance(status, Mapping) and not any(
        v is not None for v in status.values()
    ):
        status = None
    return (any(a is not None and a.get("value") is not None for a in attributes.values())
            or status is not None or result.get("operational_status") is not None)


@dataclass(frozen=True)
class RenderedRows:
    """A job's result lines and, per row, whether it succeeded and is billable (1 or 0)."""

    lines: list[str]
    succeeded: bytes
    billable: bytes


def render_job_rows(
    kind: Literal["validate", "enrich"],
    pois: Sequence[Mapping[str, Any]],
    *,
    settings: SynthSettings,
    now: str,
) -> RenderedRows:
    """Each place's result line (no newline), with per-row outcome flags, in input order."""
    c = _Ctx(settings, now, None)
    lines: list[str] = []
    ok_flags = bytearray()
    bill_flags = bytearray()
    if kind == "validate":
        for poi in pois:
            line, ok = _validate_line(c, poi)
            lines.append(line)
            ok_flags.append(ok)
        bill_flags = ok_flags  # a validate success always carries an operational_status
    elif kind == "enrich":
        plans: dict[tuple[tuple[str, ...] | None, Any], _Plan] = {}
        for poi in pois:
            attrs, fmt = poi.get("attributes"), poi.get("response_format")
            key = (tuple(attrs) if attrs else None, fmt)
            plan = plans.get(key)
            if plan is None:
                plan = plans[key] = _plan(attrs, fmt)
            line, ok, bill = _enrich_line(c, poi, plan)
            lines.append(line)
            ok_flags.append(ok)
            bill_flags.append(bill)
    else:
        raise ValueError(f"job kind must be validate or enrich, not {kind!r}")
    return RenderedRows(lines, bytes(ok_flags), bytes(bill_flags))


def render_job_lines(
    kind: Literal["validate", "enrich"],
    pois: Sequence[Mapping[str, Any]],
    *,
    settings: SynthSettings,
    now: str,
) -> tuple[bytes, JobTally]:
    """A bulk job's uncompressed JSON Lines result: one compact line per place, input order."""
    rows = render_job_rows(kind, pois, settings=settings, now=now)
    succeeded = sum(rows.succeeded)
    tally = JobTally(len(pois), succeeded, len(pois) - succeeded, sum(rows.billable))
    return ("\n".join(rows.lines) + ("\n" if rows.lines else "")).encode(), tally


def research_rows(
    request: DeepResearchRequest, *, settings: SynthSettings, agent_available: bool = True
) -> tuple[list[dict[str, Any]], int]:
    """DeepResearchRow dicts of the processed places (sample applied), and the credits billed."""
    c = _Ctx(settings, "", None)
    rows: list[dict[str, Any]] = []
    credits = 0
    for poi in request.pois[: request.sample] if request.sample else request.pois:
        _, h = c.digests(place_fingerprint(poi.model_dump()))
        st = STATUS_OF[h[5]]
        place = Place(poi, h, st != _NOT_EXISTS, EXISTENCE[st][h[8]], c.salt)
        row, billed = research_row(
            place, request, fail_rate=settings.fail_rate, agent_available=agent_available
        )
        rows.append(row)
        credits += billed
    return rows, credits
