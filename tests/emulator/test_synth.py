"""The sandbox's outcome synthesis: determinism, realism, shapes, job files, billing, research."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date
from functools import cache
from typing import Any

import pytest

from placeflow.api.models import (
    CELL_STATUSES,
    CLOSURE_REASONS,
    WEEKDAYS,
    DeepResearchRequest,
    DeepResearchRow,
    POIEnrichResponse,
    POIValidateResponse,
)
from placeflow.emulator.synth import (
    JobTally,
    SynthSettings,
    enrich_outcome,
    is_billable,
    place_fingerprint,
    render_job_lines,
    research_estimate,
    research_rows,
    unresolvable_coordinates,
    validate_outcome,
)
from placeflow.fields import VALUE_ATTRIBUTES

NOW = "2026-09-21T10:00:00.000Z"
TODAY = date(2026, 9, 21)
N = 5_000
NO_FAIL = SynthSettings(fail_rate=0.0)
VALIDATE_KEYS = {
    "success",
    "id",
    "existence_confidence",
    "operational_status",
    "error",
    "error_code",
    "request_id",
    "validation_timestamp",
}
ENRICH_KEYS = {
    "success",
    "id",
    "attributes",
    "status",
    "operational_status",
    "place_summary",
    "enrichment_timestamp",
    "error",
    "error_code",
    "request_id",
}
STATUS_BLOCK_KEYS = {"status", "closure_confidence", "closure_reason"}
ALL_ENRICH = [*VALUE_ATTRIBUTES, "existence", "open_closed"]
CITIES = ("Springfield", "Portland", "Austin", "Lyon", "Leeds", "Osaka", "Porto", "Graz")
COUNTRIES = ("US", "US", "US", "FR", "GB", "JP", "PT", "AT", None)
WORDS = ("Cafe", "Bakery", "Hardware", "Books", "Salon", "Garage", "Deli", "Pharmacy")


def place(i: int, **extra: Any) -> dict[str, Any]:
    """A distinct synthetic place, shaped like a model_dump of POIEnrichRequest."""
    return {
        "id": f"p{i}",
        "poi_name": f"{WORDS[i % 8]} {i} & Sons",
        "street": f"{i} Main St",
        "city": CITIES[i % 8],
        "region": None,
        "postcode": f"{10000 + i}",
        "country": COUNTRIES[i % 9],
        "address": None,
        "latitude": 40.0 + i * 1e-4,
        "longitude": -75.0 - i * 1e-4,
        "attributes": None,
        "include_summary": False,
        "response_format": "attributes",
        **extra,
    }


PLACES = [place(i) for i in range(N)]


def lines(kind: Any, pois: list[dict[str, Any]], settings: SynthSettings) -> list[dict[str, Any]]:
    body, _ = render_job_lines(kind, pois, settings=settings, now=NOW)
    return [json.loads(line) for line in body.splitlines()]


@cache
def raw(kind: Any, seed: int = 0, epoch: int = 0) -> list[bytes]:
    """The job file lines of PLACES, unparsed (same ids throughout, so comparable as bytes)."""
    body, _ = render_job_lines(
        kind, PLACES, settings=SynthSettings(seed=seed, epoch=epoch), now=NOW
    )
    return body.splitlines()


@cache
def bulk(
    kind: str, fail_rate: float = 0.0, attrs: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The outcomes of PLACES (memoised: several tests read the same 5,000 rows)."""
    pois = PLACES if attrs is None else [p | {"attributes": list(attrs)} for p in PLACES]
    return lines(kind, pois, SynthSettings(fail_rate=fail_rate))


# --- determinism -------------------------------------------------------------------------


def test_same_input_gives_same_outcome() -> None:
    """Validate, enrich and a job file are byte-for-byte repeatable for the same inputs."""
    p = place(7, attributes=ALL_ENRICH, include_summary=True)
    assert validate_outcome(p, settings=NO_FAIL, now=NOW) == validate_outcome(
        dict(p), settings=NO_FAIL, now=NOW
    )
    assert enrich_outcome(p, settings=NO_FAIL, now=NOW) == enrich_outcome(
        dict(p), settings=NO_FAIL, now=NOW
    )
    pois = PLACES[:200]
    assert render_job_lines("enrich", pois, settings=NO_FAIL, now=NOW) == render_job_lines(
        "enrich", [dict(p) for p in pois], settings=NO_FAIL, now=NOW
    )


def test_id_is_passed_through_and_does_not_change_the_outcome() -> None:
    """Only `id` differs between the answers for the same place under different ids."""
    for i in range(50):
        a, b = place(i, attributes=ALL_ENRICH), place(i, id=f"other-{i}", attributes=ALL_ENRICH)
        for fn in (validate_outcome, enrich_outcome):
            ra, rb = fn(a, settings=NO_FAIL, now=NOW), fn(b, settings=NO_FAIL, now=NOW)
            assert (ra["id"], rb["id"]) == (f"p{i}", f"other-{i}")
            assert ra | {"id": None} == rb | {"id": None}
    assert validate_outcome(place(1, id=None), settings=NO_FAIL, now=NOW)["id"] is None


def test_fingerprint_folds_case_and_whitespace_and_ignores_id() -> None:
    """Case, runs of whitespace and the id leave the fingerprint alone; a real change does not."""
    p = place(3)
    noisy = p | {
        "id": "x",
        "poi_name": "  " + p["poi_name"].upper().replace(" ", " \t "),
        "city": p["city"] + "  ",
    }
    assert place_fingerprint(noisy) == place_fingerprint(p)
    assert place_fingerprint(p | {"city": "Elsewhere"}) != place_fingerprint(p)
    assert place_fingerprint(p | {"latitude": 41.0}) != place_fingerprint(p)
    assert place_fingerprint({"poi_name": p["poi_name"]}) != place_fingerprint(p)


def test_seed_changes_outcomes() -> None:
    """Another seed gives most places a different enrich outcome."""
    a, b = raw("enrich"), raw("enrich", seed=1)
    assert sum(x != y for x, y in zip(a, b, strict=True)) > N // 2


def test_epoch_changes_a_few_places_and_keeps_them_changed() -> None:
    """Epoch 1 changes 1-10% of places; epoch 2 changes about as many more, keeping epoch 1's."""
    e0, e1, e2 = (raw("enrich", epoch=e) for e in (0, 1, 2))
    moved1 = {i for i in range(N) if e0[i] != e1[i]}
    moved2 = {i for i in range(N) if e0[i] != e2[i]}
    assert 0.01 * N < len(moved1) < 0.10 * N
    assert 0.01 * N < len(moved2 - moved1) < 0.10 * N
    assert len(moved1 - moved2) < 0.005 * N  # a moved place does not snap back


def test_validate_and_enrich_agree_on_a_place() -> None:
    """A place's operational status and existence are the same from validate and enrich."""
    for v, e in zip(bulk("validate")[:500], bulk("enrich")[:500], strict=True):
        assert v["operational_status"] == e["operational_status"]
        assert v["existence_confidence"] == e["status"]["existence_confidence"]


# --- realism -----------------------------------------------------------------------------


def test_status_proportions_and_ranges() -> None:
    """Statuses, closure reasons and confidences fall in the documented bands."""
    rows = bulk("validate")
    counts = Counter(r["operational_status"]["status"] for r in rows)
    for status, (lo, hi) in {
        "open": (0.74, 0.82),
        "closed": (0.08, 0.12),
        "unknown": (0.06, 0.10),
        "not_exists": (0.025, 0.055),
    }.items():
        assert lo * N < counts[status] < hi * N, (status, counts)
    reasons = Counter(
        r["operational_status"]["closure_reason"]
        for r in rows
        if r["operational_status"]["status"] == "closed"
    )
    assert set(reasons) == set(CLOSURE_REASONS)
    for r in rows:
        block, ec = r["operational_status"], r["existence_confidence"]
        assert 0 <= ec <= 1
        if block["status"] == "closed":
            assert 0.55 <= block["closure_confidence"] <= 0.99
        elif block["status"] == "not_exists":
            assert block["closure_confidence"] is None and ec < 0.3
        else:
            assert 0 <= block["closure_confidence"] <= 0.3
        if block["status"] == "open":
            assert ec >= 0.7


def test_closure_reason_is_null_unless_closed() -> None:
    """closure_reason is set exactly when the status is closed."""
    for r in bulk("validate"):
        block = r["operational_status"]
        assert (block["closure_reason"] is None) == (block["status"] != "closed")


def test_failed_rows_at_fail_rate() -> None:
    """About fail_rate of rows fail, with every outcome field null and EXTERNAL_API_ERROR."""
    rows = bulk("validate", fail_rate=0.01)
    failed = [r for r in rows if not r["success"]]
    assert 0.004 * N < len(failed) < 0.02 * N
    for r in failed:
        assert r["existence_confidence"] is None and r["operational_status"] is None
        assert r["error"] and r["error_code"] == "EXTERNAL_API_ERROR"
    for r in lines("enrich", PLACES[:1000], SynthSettings(fail_rate=0.05)):
        if not r["success"]:
            assert r["attributes"] is r["status"] is r["operational_status"] is None
            assert r["error_code"] == "EXTERNAL_API_ERROR"
    assert all(r["success"] for r in bulk("validate"))
    assert not any(
        r["success"] for r in lines("validate", PLACES[:100], SynthSettings(fail_rate=1.0))
    )


def test_attribute_null_shares_confidence_and_as_of() -> None:
    """Each attribute is null about as often as documented; confidence and as_of are null iff
    the value is, and as_of is a date within the year before now."""
    rows = bulk("enrich", attrs=tuple(ALL_ENRICH))
    shares = {
        "opening_hours": 0.20,
        "phone": 0.10,
        "website": 0.15,
        "facebook": 0.40,
        "instagram": 0.55,
        "tiktok": 0.80,
        "email": 0.50,
    }
    for name, share in shares.items():
        nulls = sum(r["attributes"][name]["value"] is None for r in rows)
        assert share * N - 0.05 * N < nulls < share * N + 0.07 * N, (name, nulls)  # + not_exists
    for r in rows:
        for cell in r["attributes"].values():
            value_null = cell["value"] is None
            assert value_null == (cell["confidence"] is None) == (cell["as_of"] is None)
            if cell["value"] is not None:
                assert cell["confidence"] in ("high", "medium", "low")
                assert 0 <= (TODAY - date.fromisoformat(cell["as_of"])).days < 366
        if r["operational_status"]["status"] == "not_exists":
            assert all(cell["value"] is None for cell in r["attributes"].values())


def test_attribute_value_shapes() -> None:
    """Values have the spec's shapes: hours by weekday, E.164 phone, slugged web presence."""
    rows = bulk("enrich", attrs=tuple(ALL_ENRICH))[:1500]
    seen_split = False
    for p, r in zip(PLACES, rows, strict=False):
        a = {k: v["value"] for k, v in r["attributes"].items() if v["value"] is not None}
        if "opening_hours" in a:
            assert set(a["opening_hours"]) == {"days"} and list(a["opening_hours"]["days"]) == list(
                WEEKDAYS
            )
            for day in a["opening_hours"]["days"].values():
                assert day == "closed" or all(
                    set(s) == {"open", "close"}
                    and re.fullmatch(r"\d\d:\d\d", s["open"])
                    and s["open"] < s["close"]
                    for s in day
                )
                seen_split |= isinstance(day, list) and len(day) == 2
        if "phone" in a:
            prefix = {"FR": "+33", "GB": "+44", "JP": "+81", "PT": "+351", "AT": "+43"}.get(
                p["country"], "+1"
            )
            assert re.fullmatch(r"\+[1-9]\d{7,14}", a["phone"]["number"])
            assert a["phone"]["number"].startswith(prefix)
        slug = re.sub(r"[^a-z0-9]", "", p["poi_name"].lower())
        if "website" in a:
            assert re.fullmatch(rf"https://(www\.)?{slug}\.[a-z.]+", a["website"]["url"])
        for social in ("facebook", "instagram", "tiktok"):
            if social in a:
                assert set(a[social]) == {"url", "handle"}
                assert (
                    a[social]["handle"].startswith(slug)
                    and a[social]["handle"] in a[social]["url"]
                    and f"{social}.com/" in a[social]["url"]
                )
        if "email" in a:
            assert re.fullmatch(rf"info@{slug}\.[a-z.]+", a["email"]["email"])
    assert seen_split


def test_cell_format_statuses() -> None:
    """Cells have a valid status: confirmed high/medium, estimated always low, else no value."""
    pois = [p | {"attributes": ALL_ENRICH, "response_format": "cell"} for p in PLACES[:1000]]
    statuses: Counter[str] = Counter()
    for r in lines("enrich", pois, NO_FAIL):
        for cell in r["attributes"].values():
            assert set(cell) == {"value", "confidence", "status"}
            assert cell["status"] in CELL_STATUSES
            statuses[cell["status"]] += 1
            if cell["status"] == "estimated":
                assert cell["confidence"] == "low" and cell["value"] is not None
            elif cell["status"] == "confirmed":
                assert cell["confidence"] in ("high", "medium") and cell["value"] is not None
            else:
                assert cell["value"] is None and cell["confidence"] is None
    assert set(statuses) == {"confirmed", "estimated", "unconfirmed"}


def test_status_blocks_and_summary_only_when_requested() -> None:
    """status/operational_status follow existence/open_closed, place_summary include_summary,
    and attributes holds the requested value attributes in request order."""
    for i in range(200):
        only_phone = enrich_outcome(place(i, attributes=["phone"]), settings=NO_FAIL, now=NOW)
        assert list(only_phone["attributes"]) == ["phone"]
        assert only_phone["status"] is only_phone["operational_status"] is None
        assert only_phone["place_summary"] is None
        both = enrich_outcome(
            place(i, attributes=["existence", "open_closed"], include_summary=True),
            settings=NO_FAIL,
            now=NOW,
        )
        assert both["attributes"] == {}
        assert both["status"] is not None and both["operational_status"] is not None
        summary = both["place_summary"]
        assert summary and place(i)["poi_name"] in summary and summary.endswith(".")
    default = enrich_outcome(place(1), settings=NO_FAIL, now=NOW)
    assert list(default["attributes"]) == ["opening_hours", "phone", "website"]
    reordered = enrich_outcome(
        place(1, attributes=["email", "existence", "phone", "email"]), settings=NO_FAIL, now=NOW
    )
    assert list(reordered["attributes"]) == ["email", "phone"]  # request order, once each


# --- shapes ------------------------------------------------------------------------------


def test_validate_outcomes_parse_and_have_exactly_the_spec_keys() -> None:
    """Every validate outcome parses as POIValidateResponse and has only the spec's keys."""
    assert set(POIValidateResponse.model_fields) == VALIDATE_KEYS
    rows = [
        validate_outcome(p, settings=SynthSettings(fail_rate=0.2), now=NOW, request_id=f"req_{i}")
        for i, p in enumerate(PLACES[:300])
    ]
    assert {r["success"] for r in rows} == {True, False}
    for i, r in enumerate(rows):
        POIValidateResponse.model_validate(r)
        assert set(r) == VALIDATE_KEYS
        assert r["request_id"] == f"req_{i}" and r["validation_timestamp"] == NOW
        if r["success"]:
            assert set(r["operational_status"]) == STATUS_BLOCK_KEYS


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"attributes": ALL_ENRICH, "include_summary": True},
        {"attributes": ALL_ENRICH, "response_format": "cell"},
        {"attributes": ["email", "email"]},
        {"street": None, "postcode": None, "city": None},
    ],
)
def test_enrich_outcomes_parse_and_have_exactly_the_spec_keys(extra: dict[str, Any]) -> None:
    """Every enrich outcome (any options, failed or not) parses as POIEnrichResponse and has
    only the spec's keys, down to each attribute result."""
    assert set(POIEnrichResponse.model_fields) == ENRICH_KEYS
    settings = SynthSettings(fail_rate=0.2)
    for i, p in enumerate(PLACES[:300]):
        r = enrich_outcome(p | extra, settings=settings, now=NOW, request_id=f"req_{i}")
        POIEnrichResponse.model_validate(r)
        assert set(r) == ENRICH_KEYS
        assert r["request_id"] == f"req_{i}" and r["enrichment_timestamp"] == NOW
        if r["success"]:
            cell = extra.get("response_format") == "cell"
            keys = {"value", "confidence", "status"} if cell else {"value", "as_of", "confidence"}
            assert all(set(a) == keys for a in r["attributes"].values())
            if r["status"] is not None:
                assert set(r["status"]) == {"existence_confidence"}


# --- job files ---------------------------------------------------------------------------


def mixed_pois(kind: str) -> list[dict[str, Any]]:
    """Rows with every per-row option, odd ids, and coordinates-only places."""
    pois: list[dict[str, Any]] = []
    options: list[dict[str, Any]] = [
        {},
        {"attributes": ALL_ENRICH},
        {"response_format": "cell"},
        {"include_summary": True, "attributes": ["tiktok"]},
    ]
    for i, p in enumerate(PLACES[:600]):
        row = p | {"id": [None, f"p{i}", 'q"\u00e9\u2603{x}'][i % 3]}
        if kind == "enrich":
            row |= options[i % 4]
        if i % 10 == 0:
            row |= {"street": None, "city": None, "postcode": None}
        pois.append(row)
    pois.append({"poi_name": "Null Island", "latitude": 0.0, "longitude": 0.0})
    return pois


@pytest.mark.parametrize("kind", ["validate", "enrich"])
def test_render_job_lines_equals_the_per_row_outcomes(kind: Any) -> None:
    """Each line is the compact JSON of that row's single-place outcome, in input order, with
    a correct tally."""
    pois = mixed_pois(kind)
    settings = SynthSettings(seed=5, fail_rate=0.05)
    body, tally = render_job_lines(kind, pois, settings=settings, now=NOW)
    one = validate_outcome if kind == "validate" else enrich_outcome
    expected = [one(p, settings=settings, now=NOW) for p in pois]
    assert body.endswith(b"\n") and body.count(b"\n") == len(pois)
    body.decode("utf-8")
    assert body.splitlines() == [json.dumps(r, separators=(",", ":")).encode() for r in expected]
    ok = sum(r["success"] for r in expected)
    billable = sum(is_billable(kind, r) for r in expected)
    assert tally == JobTally(rows=len(pois), succeeded=ok, failed=len(pois) - ok, billable=billable)
    assert 0 < tally.failed < tally.succeeded


def test_render_job_lines_rejects_an_unknown_kind() -> None:
    """A job kind other than validate or enrich is a ValueError, not an empty file."""
    with pytest.raises(ValueError, match="validate or enrich"):
        render_job_lines("research", PLACES[:1], settings=NO_FAIL, now=NOW)  # type: ignore[arg-type]  # on purpose


@pytest.mark.parametrize(
    ("kind", "result", "billable"),
    [
        (
            "validate",
            {
                "success": True,
                "existence_confidence": 0.9,
                "operational_status": {"status": "open"},
            },
            True,
        ),
        (
            "validate",
            {"success": True, "existence_confidence": 0.9, "operational_status": None},
            True,
        ),
        (
            "validate",
            {"success": True, "existence_confidence": None, "operational_status": None},
            False,
        ),
        ("validate", {"success": False, "error": "x", "existence_confidence": None}, False),
        (
            "enrich",
            {
                "success": True,
                "attributes": {"phone": {"value": {"number": "+1"}}},
                "status": None,
                "operational_status": None,
            },
            True,
        ),
        (
            "enrich",
            {
                "success": True,
                "attributes": {"phone": {"value": None}, "email": None},
                "status": None,
                "operational_status": None,
            },
            False,
        ),
        (
            "enrich",
            {
                "success": True,
                "attributes": {},
                "status": {"existence_confidence": 0.1},
                "operational_status": None,
            },
            True,
        ),
        (
            "enrich",
            {
                "success": True,
                "attributes": None,
                "status": None,
                "operational_status": {"status": "unknown"},
            },
            True,
        ),
        ("enrich", {"success": False, "attributes": {"phone": {"value": {"number": "+1"}}}}, False),
    ],
)
def test_is_billable(kind: Any, result: dict[str, Any], billable: bool) -> None:
    """Only successful rows with a value or a non-null status are charged."""
    assert is_billable(kind, result) is billable


def test_not_exists_row_with_only_value_attributes_is_not_billable() -> None:
    """An enrich row that found nothing and asked no status is free; with a status it is not."""
    rows = bulk("enrich", attrs=("phone",))
    dead = [i for i, r in enumerate(rows) if r["attributes"]["phone"]["value"] is None]
    assert dead and not any(is_billable("enrich", rows[i]) for i in dead)
    assert all(is_billable("enrich", r) for r in bulk("enrich"))


# --- coordinates-only --------------------------------------------------------------------


def coords_only(i: int) -> dict[str, Any]:
    return {
        "id": f"c{i}",
        "poi_name": f"Spot {i}",
        "latitude": 10 + i * 1e-3,
        "longitude": 20 + i * 1e-3,
        "country": "US",
    }


def test_unresolvable_coordinates_rules() -> None:
    """(0, 0) and ~3% of coordinates-only places are unresolvable; any address field resolves."""
    assert unresolvable_coordinates(
        {"poi_name": "x", "latitude": 0, "longitude": 0}, settings=NO_FAIL
    )
    unresolvable = [
        i for i in range(N) if unresolvable_coordinates(coords_only(i), settings=NO_FAIL)
    ]
    assert 0.015 * N < len(unresolvable) < 0.05 * N
    for i in unresolvable[:50]:
        for field in ("street", "city", "region", "postcode", "address"):
            assert not unresolvable_coordinates(coords_only(i) | {field: "1"}, settings=NO_FAIL)
        assert not unresolvable_coordinates(coords_only(i) | {"longitude": None}, settings=NO_FAIL)
        assert unresolvable_coordinates(coords_only(i) | {"street": "  "}, settings=NO_FAIL)
    later = [
        i
        for i in range(N)
        if unresolvable_coordinates(coords_only(i), settings=SynthSettings(fail_rate=0.0, epoch=3))
    ]
    assert later == unresolvable


def test_enrich_of_unresolvable_coordinates_is_a_failed_validation_item() -> None:
    """enrich_outcome answers exactly the unresolvable places with success false and
    VALIDATION_ERROR; validate answers them normally."""
    poi = {"id": "n", "poi_name": "Null Island", "latitude": 0.0, "longitude": 0.0}
    r = enrich_outcome(poi, settings=NO_FAIL, now=NOW, request_id="req_1")
    assert r["success"] is False and r["error_code"] == "VALIDATION_ERROR" and r["error"]
    assert r["id"] == "n" and r["request_id"] == "req_1" and r["attributes"] is None
    assert not is_billable("enrich", r)
    assert validate_outcome(poi, settings=NO_FAIL, now=NOW)["success"] is True
    for i in range(600):
        r = enrich_outcome(coords_only(i), settings=NO_FAIL, now=NOW)
        assert (r["error_code"] == "VALIDATION_ERROR") == unresolvable_coordinates(
            coords_only(i), settings=NO_FAIL
        )


# --- deep research -----------------------------------------------------------------------


def research(
    n: int = 10,
    attrs: tuple[str, ...] = ("owner_person", "owner_org", "cuisine"),
    offset: int = 0,
    **options: Any,
) -> DeepResearchRequest:
    return DeepResearchRequest.model_validate(
        {
            "pois": [
                {
                    k: v
                    for k, v in place(offset + i).items()
                    if k not in ("attributes", "include_summary", "response_format")
                }
                for i in range(n)
            ],
            "attributes": [{"name": a} for a in attrs],
            **options,
        }
    )


@pytest.mark.parametrize(
    ("options", "places", "credits"),
    [
        ({}, 10, 10 * 3),
        ({"validate_existence": True}, 10, 10 * 4),
        ({"verify_identity": True}, 10, 10 * 4),
        ({"validate_existence": True, "verify_identity": True, "sample": 4}, 4, 4 * 5),
        ({"sample": 20}, 10, 10 * 3),
    ],
)
def test_research_credits_and_estimate(options: dict[str, Any], places: int, credits: int) -> None:
    """Credits are places x (attributes + existence) + 1 per row for verify_identity, with the
    sample applied; abstained attributes are billed; the estimate names the same sum."""
    req = research(**options)
    rows, billed = research_rows(req, settings=NO_FAIL)
    assert len(rows) == places and billed == credits == research_estimate(req)
    assert [r["id"] for r in rows] == [p.id for p in req.pois[:places]]
    assert any(c["status"] == "unconfirmed" for r in rows for c in r["fields"].values())


def test_research_without_agent_abstains_and_bills_nothing() -> None:
    """agent_available False: every row and field abstains and nothing is billed."""
    rows, billed = research_rows(
        research(validate_existence=True, verify_identity=True),
        settings=SynthSettings(fail_rate=1.0),
        agent_available=False,
    )
    assert billed == 0
    for r in rows:
        assert r["status"] == r["outcome"] == "abstain" and r["error"] is None
        assert all(
            c == {"value": None, "confidence": None, "status": "unconfirmed"}
            for c in r["fields"].values()
        )
        assert {v["verdict"] for v in r["identity"].values()} == {"unresolved"}


def test_research_error_rows_are_not_billed() -> None:
    """Rows that error have null fields, an error, no outcome, and bill nothing."""
    rows, billed = research_rows(
        research(verify_identity=True), settings=SynthSettings(fail_rate=1.0)
    )
    assert billed == 0
    assert all(
        r["status"] == "error" and r["fields"] is None and r["outcome"] is None and r["error"]
        for r in rows
    )
    some = [
        research_rows(research(offset=k * 10), settings=SynthSettings(fail_rate=0.1))
        for k in range(20)
    ]
    errors = sum(r["status"] == "error" for rows_, _ in some for r in rows_)
    assert 0 < errors < 60
    assert sum(b for _, b in some) == 3 * (200 - errors)


def test_research_rows_shapes_and_owner_exclusivity() -> None:
    """Rows parse as DeepResearchRow; status follows any confirmed field; owner_person and
    owner_org are never both established for a place, and each is established sometimes."""
    established: Counter[str] = Counter()
    for k in range(30):
        req = research(
            offset=k * 10,
            attrs=("owner_person", "owner_org", "has_parking"),
            validate_existence=True,
            verify_identity=True,
        )
        rows, _ = research_rows(req, settings=NO_FAIL)
        for r in rows:
            DeepResearchRow.model_validate(r)
            assert list(r) == ["id", "poi_name", "identity", "status", "outcome", "fields", "error"]
            fields = r["fields"]
            assert set(fields) == {"owner_person", "owner_org", "has_parking", "existence"}
            for c in fields.values():
                assert c["status"] in CELL_STATUSES and (
                    c["status"] != "estimated" or c["confidence"] == "low"
                )
            owners = [n for n in ("owner_person", "owner_org") if fields[n]["value"] is not None]
            assert len(owners) <= 1
            established.update(owners)
            confirmed = any(c["status"] == "confirmed" for c in fields.values())
            assert r["status"] == r["outcome"] == ("enriched" if confirmed else "abstain")
            assert fields["has_parking"]["value"] in (None, True, False)
            assert fields["existence"]["value"] in (True, False)
    assert established["owner_person"] > 20 and established["owner_org"] > 10


def test_research_without_verify_identity_has_no_identity_block() -> None:
    """The identity block is present only when verify_identity is true."""
    rows, _ = research_rows(research(), settings=NO_FAIL)
    assert all("identity" not in r for r in rows)


def test_identity_verdicts() -> None:
    """Identity verdicts are confirmed/corrected/unresolved; confirmed and unresolved return the
    caller's string; formatting variants get the same verdict with their own string back."""
    verdicts: Counter[str] = Counter()
    for k in range(30):
        rows, _ = research_rows(research(offset=k * 10, verify_identity=True), settings=NO_FAIL)
        for r in rows:
            ident = r["identity"]
            assert set(ident) == {"name", "address"}
            for part in ident.values():
                assert set(part) == {"value", "verdict", "original"}
                verdicts[part["verdict"]] += 1
                if part["verdict"] != "corrected":
                    assert part["value"] == part["original"]
                else:
                    assert part["value"] != part["original"]
    assert set(verdicts) == {"confirmed", "corrected", "unresolved"}
    for k in range(40):
        req = research(n=1, offset=k, verify_identity=True)
        poi = req.pois[0]
        variant = req.model_copy(
            update={
                "pois": [
                    poi.model_copy(
                        update={
                            "poi_name": poi.poi_name.replace("&", "and").upper() + ", Inc.",
                            "street": (poi.street or "").replace("St", "Street"),
                        }
                    )
                ]
            }
        )
        a, b = (research_rows(x, settings=NO_FAIL)[0][0]["identity"] for x in (req, variant))
        assert [p["verdict"] for p in a.values()] == [p["verdict"] for p in b.values()]
        if b["name"]["verdict"] == "confirmed":
            assert b["name"]["value"] == variant.pois[0].poi_name
