"""Contract: deep research credits: per place per attribute, identity, estimate, sample, caps."""

from __future__ import annotations

from typing import Any

from placeflow.api.models import DeepResearchResponse
from placeflow.emulator import FaultConfig, KeySpec

from .conftest import KEY, Harness, MakeHarness, place

ATTRS = [
    {"name": "owner_person"},
    {"name": "owner_org"},
    {"name": "has_patio", "value_type": "bool"},
]


def research(h: Harness, n: int = 4, **kw: Any) -> Any:
    return h.post(
        "/v1/deep-research", {"pois": [place(i) for i in range(n)], "attributes": ATTRS, **kw}
    )


def test_bills_one_credit_per_place_per_attribute(sb: Harness) -> None:
    """4 places x 3 attributes bill the rows that did not error, abstentions included."""
    r = research(sb)
    assert r.status_code == 200
    body = DeepResearchResponse.model_validate(r.json())
    assert body.meta is not None and body.meta.estimated_credits == 12
    assert [row.id for row in body.rows] == ["p0", "p1", "p2", "p3"]
    answered = sum(1 for row in body.rows if row.status != "error")
    assert sb.credits()["charged"] == 3 * answered


def test_verify_identity_adds_one_per_row_and_existence_one_attribute(sb: Harness) -> None:
    """verify_identity is +1 per row; validate_existence adds an attribute per row."""
    body = research(sb, verify_identity=True, validate_existence=True).json()
    assert body["meta"]["estimated_credits"] == 4 * (3 + 1) + 4
    assert all(row["identity"] for row in body["rows"] if row["status"] != "error")


def test_estimate_only_runs_and_charges_nothing(sb: Harness) -> None:
    """estimate_only returns the estimate and empty rows, charging nothing."""
    body = research(sb, estimate_only=True, sample=2).json()
    assert body["rows"] == [] and body["meta"] == {
        "stopped_reason": "estimate_only",
        "estimated_credits": 6,
    }
    assert sb.credits()["charged"] == 0


def test_sample_processes_only_the_first_places(sb: Harness) -> None:
    """sample N researches and bills only the first N places."""
    body = research(sb, n=5, sample=2).json()
    assert len(body["rows"]) == 2 and sb.credits()["charged"] <= 6


def test_max_credits_below_estimate_is_402_and_charges_nothing(sb: Harness) -> None:
    """An estimate above max_credits is 402 max_credits_exceeded with the estimate."""
    r = research(sb, max_credits=11)
    assert r.status_code == 402
    assert r.json()["detail"]["error"] == "max_credits_exceeded"
    assert r.json()["detail"]["estimated_credits"] == 12
    assert sb.credits()["charged"] == 0


def test_quota_exceeded_when_balance_is_short(make_harness: MakeHarness) -> None:
    """A key that cannot cover the estimate gets 402 quota_exceeded with needed_credits."""
    h = make_harness(keys=(KeySpec(key=KEY, credits=5),))
    r = research(h)
    assert r.status_code == 402 and r.json()["detail"]["error"] == "quota_exceeded"
    assert r.json()["detail"]["needed_credits"] == 12


def test_research_unavailable_abstains_everything_for_free(make_harness: MakeHarness) -> None:
    """When research is unavailable every row abstains, stopped_reason agent_unavailable, free."""
    h = make_harness(faults=FaultConfig(research_unavailable=True))
    body = research(h).json()
    assert body["meta"]["stopped_reason"] == "agent_unavailable"
    assert {row["status"] for row in body["rows"]} == {"abstain"}
    assert h.credits()["charged"] == 0


def test_policy_rejected_field_is_422_and_free(sb: Harness) -> None:
    """A field the policy rejects is 422 FIELD_REJECTED naming it; nothing charged."""
    r = sb.post("/v1/deep-research", {"pois": [place()], "attributes": [{"name": "owner_ssn"}]})
    assert r.status_code == 422
    assert r.json()["error_code"] == "FIELD_REJECTED" and "owner_ssn" in r.json()["rejected_fields"]
    assert sb.credits()["charged"] == 0


def test_research_limits(sb: Harness) -> None:
    """More than 10 places or 20 attributes, or an empty list, is a 400."""
    assert research(sb, n=11).status_code == 400
    many = [{"name": f"f{i}"} for i in range(21)]
    r = sb.post("/v1/deep-research", {"pois": [place()], "attributes": many})
    assert r.status_code == 400 and r.json()["detail"][0]["field"] == "attributes"
