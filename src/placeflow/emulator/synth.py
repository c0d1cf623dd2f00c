"""Deterministic outcomes of the place endpoints for the sandbox: validate, enrich, bulk files.

Every draw comes from one keyed hash of a place's fingerprint (synth_draws), so the same place,
seed and epoch always give the same outcome and the client's `id` never changes it. Result lines
are assembled from JSON fragments serialised once at import (no json.dumps per row), so a bulk
file renders at around 10^5 rows/s; `validate_outcome` / `enrich_outcome` return those very
lines parsed, so a single-place answer and a job file line can never disagree. The tables and
the attribute values live in synth_tables, the deep research rows in synth_research.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, Literal

from placeflow.api.models import CLOSURE_REASONS, OPERATIONAL_STATUSES, DeepResearchRequest
from placeflow.emulator.synth_draws import (
    CallContext,
    id_json,
    salt,
    unresolvable,
)
from placeflow.emulator.synth_draws import SynthSettings as SynthSettings  # re-export
from placeflow.emulator.synth_draws import place_fingerprint as place_fingerprint  # re-export
from placeflow.emulator.synth_research import Place, research_row
from placeflow.emulator.synth_research import research_estimate as research_estimate  # re-export
from placeflow.emulator.synth_tables import (
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
    place_slug,
    summary_sentence,
    value_json,
)
from placeflow.fields import DEFAULT_ENRICH_ATTRIBUTES, VALUE_ATTRIBUTES


@dataclass(frozen=True)
class JobTally:
    rows: int
    succeeded: int
    failed: int
    billable: int


_CLOSED, _NOT_EXISTS = 1, 3  # indices into OPERATIONAL_STATUSES


# --- validate ----------------------------------------------------------------------------


def _status_fragments(h: bytes) -> tuple[int, str, str]:
    """(status index, existence_confidence JSON, operational_status JSON) of a draw digest."""
    st = STATUS_OF[h[5]]
    op = OP_JSON[st][REASON_OF[h[6]] if st == _CLOSED else 0][h[7]]
    return st, EXISTENCE_JSON[st][h[8]], op


X_EXT = '"x_ext":{"note":"unknown to the spec","v":2}'
"""A field the spec never names (FaultConfig.unknown_fields), as a JSON member."""


def _with_unknown(obj: str) -> str:
    """A JSON object with X_EXT as its first member; null becomes an object of X_EXT alone."""
    if obj == "null":
        return f"{{{X_EXT}}}"
    return f"{{{X_EXT},{obj[1:]}" if obj != "{}" else f"{{{X_EXT}}}"


def _validate_line(c: CallContext, poi: Mapping[str, Any]) -> tuple[str, bool]:
    _, h = c.digests(place_fingerprint(poi))
    idj = id_json(poi.get("id"))
    top = f"{X_EXT}," if c.unknown else ""
    if (h[3] << 8 | h[4]) < c.fail_cut:
        return f'{{{top}"success":false,"id":{idj}{c.v_fail}', False
    _, ec, op = _status_fragments(h)
    if c.unknown:
        op = _with_unknown(op)
    return (
        f'{{{top}"success":true,"id":{idj},"existence_confidence":{ec},"operational_status":{op}'
        f"{c.v_ok}"
    ), True


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


def _enrich_line(c: CallContext, poi: Mapping[str, Any], plan: _Plan) -> tuple[str, bool, bool]:
    """(line, succeeded, billable) of one enrich row."""
    base, h = c.digests(place_fingerprint(poi))
    g = poi.get
    idj = id_json(g("id"))
    if unresolvable(poi, base) and _coordinates_only(poi):
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
        value = value_json(i, h, country, slug, c.social_shape)
        if i == 1 and h[31] < c.nul_cut:  # a NUL byte inside the number ("+1 555\u00001234")
            value = value[:-6] + "\\u0000" + value[-6:]
        if cell:
            parts.append(key + value + ATTR_CELL_TAIL[conf])
        else:
            parts.append(f'{key}{value}{dates[h[16 + i]]}{conf}"}}')
    status = f'{{"existence_confidence":{ec}}}' if plan.existence else "null"
    top = ""
    if c.unknown:  # billing stays the spec's: decided below from the spec's fields alone
        status, top = _with_unknown(status), f"{X_EXT},"
    summary = "null"
    if g("include_summary"):
        reason = CLOSURE_REASONS[REASON_OF[h[6]]] if st == _CLOSED else None
        summary = encode_basestring_ascii(summary_sentence(poi, OPERATIONAL_STATUSES[st], reason))
    line = (
        f'{{{top}"success":true,"id":{idj},"attributes":{{{",".join(parts)}}},"status":{status},'
        f'"operational_status":{op if plan.open_closed else "null"},"place_summary":{summary}'
        f"{c.e_ok}"
    )
    if null_status:
        return line, True, any_value or (plan.existence and c.bill_null)
    return line, True, any_value or plan.existence or plan.open_closed


# --- public ------------------------------------------------------------------------------


def _parsed(line: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(line)
    return result


def validate_outcome(
    poi: Mapping[str, Any], *, settings: SynthSettings, now: str, request_id: str | None = None
) -> dict[str, Any]:
    """The POIValidateResponse of one place, as a plain dict."""
    line, _ = _validate_line(CallContext(settings, now, request_id), poi)
    return _parsed(line)


def enrich_outcome(
    poi: Mapping[str, Any], *, settings: SynthSettings, now: str, request_id: str | None = None
) -> dict[str, Any]:
    """The POIEnrichResponse of one place (an unresolvable coordinates-only place fails with
    VALIDATION_ERROR), as a plain dict."""
    plan = _plan(poi.get("attributes"), poi.get("response_format"))
    line, _, _ = _enrich_line(CallContext(settings, now, request_id), poi, plan)
    return _parsed(line)


def unresolvable_coordinates(poi: Mapping[str, Any], *, settings: SynthSettings) -> bool:
    """True for a coordinates-only place the service cannot resolve: (0, 0) and about 3% of
    the rest, whatever the epoch."""
    if not _coordinates_only(poi):
        return False
    base = hashlib.blake2b(place_fingerprint(poi), digest_size=32, salt=salt(settings.seed))
    return unresolvable(poi, base.digest())


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
        return (
            result.get("operational_status") is not None
            or result.get("existence_confidence") is not None
        )
    attributes = result.get("attributes") or {}
    status = result.get("status")
    if (
        not null_status_billed
        and isinstance(status, Mapping)
        and not any(v is not None for v in status.values())
    ):
        status = None
    return (
        any(a is not None and a.get("value") is not None for a in attributes.values())
        or status is not None
        or result.get("operational_status") is not None
    )


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
    c = CallContext(settings, now, None)
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
    c = CallContext(settings, "", None)
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
