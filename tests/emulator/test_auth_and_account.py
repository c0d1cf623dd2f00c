"""Contract: authentication, entitlements, usage, pricing and health as the spec states them."""

from __future__ import annotations

import pytest

from placeflow.api.models import ErrorResponse, PricingCard, UsageResponse
from placeflow.emulator import KeySpec

from .conftest import KEY, Harness, MakeHarness, place

PLACE_ROUTES = [
    ("POST", "/v1/validate"),
    ("POST", "/v1/enrich"),
    ("POST", "/v1/enrich-batch"),
    ("POST", "/v1/jobs/validate"),
    ("POST", "/v1/jobs/enrich"),
    ("GET", "/v1/jobs/job_000000000000000000000000"),
    ("DELETE", "/v1/jobs/job_000000000000000000000000"),
    ("GET", "/v1/usage"),
    ("POST", "/v1/deep-research"),
]


@pytest.mark.parametrize(("method", "path"), PLACE_ROUTES)
def test_missing_key_is_401_authentication_error(sb: Harness, method: str, path: str) -> None:
    """Every keyed endpoint answers a request without X-API-Key with 401 AUTHENTICATION_ERROR."""
    r = sb.http.request(method, path, headers={"X-API-Key": ""}, json={})
    assert r.status_code == 401
    body = ErrorResponse.model_validate(r.json())
    assert body.error_code == "AUTHENTICATION_ERROR" and body.error == "API key required"


@pytest.mark.parametrize(("method", "path"), PLACE_ROUTES)
def test_unknown_key_is_403_invalid_or_revoked(sb: Harness, method: str, path: str) -> None:
    """A key that resolves to no active key gets usage's 403 'Invalid or revoked API key'."""
    r = sb.http.request(method, path, headers={"X-API-Key": "sk_nope"}, json={})
    assert r.status_code == 403
    assert r.json()["error"] == "Invalid or revoked API key"
    assert r.json()["error_code"] == "AUTHENTICATION_ERROR"


def test_revoked_key_is_refused(make_harness: MakeHarness) -> None:
    """A revoked key is refused like an unknown one, and nothing is counted against it."""
    h = make_harness(keys=(KeySpec(key=KEY, status="revoked"),))
    assert h.get("/v1/usage").status_code == 403
    assert h.stats()["keys"][KEY]["peak_per_second"] == 0


def test_missing_entitlements_answer_with_the_spec_bodies(make_harness: MakeHarness) -> None:
    """Enrichment without its entitlement and research without its own are 403 as the spec says."""
    h = make_harness(keys=(KeySpec(key=KEY, entitlements=("validation",)),))
    r = h.post("/v1/enrich", place())
    assert r.status_code == 403
    assert r.json() == {"detail": {"error": "missing entitlement: enrichment"}}
    r = h.post("/v1/deep-research", {"pois": [place()], "attributes": [{"name": "owner_org"}]})
    assert r.json() == {"detail": {"error": "endpoint not permitted for this key"}}
    assert h.post("/v1/validate", place()).status_code == 200
    assert h.credits()["charged"] == 1


def test_pricing_needs_no_key_and_lists_the_credit_table(sb: Harness) -> None:
    """GET /v1/pricing answers without a key, cacheable five minutes, with the spec's rates."""
    r = sb.http.get("/v1/pricing", headers={"X-API-Key": ""})
    assert r.status_code == 200
    assert r.headers["cache-control"] == "public, max-age=300"
    card = PricingCard.model_validate(r.json())
    assert card.unit == "credits"
    rates = {rate.key: rate for rate in card.rates}
    assert rates["validate"].credits == 1 and rates["enrich"].credits == 1
    assert rates["job_enrich"].hold == 1 and rates["call"].hold == 30


def test_health_answers_ok(sb: Harness) -> None:
    """GET /health says the server is running."""
    r = sb.http.get("/health", headers={"X-API-Key": ""})
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_usage_reflects_charges_and_in_flight_holds(sb: Harness) -> None:
    """current_usage is charged plus held; available is net of holds; only the key hint shows."""
    before = UsageResponse.model_validate(sb.get("/v1/usage").json())
    assert before.current_usage == 0 and before.available == before.quota_limit == 100_000
    assert before.key_hint == KEY[-4:] and KEY not in sb.get("/v1/usage").text
    sb.post("/v1/validate", place(1))
    sb.post("/v1/jobs/validate", {"pois": [place(i) for i in range(500)]})
    during = UsageResponse.model_validate(sb.get("/v1/usage").json())
    assert during.current_usage == 1 + 500
    assert during.available == during.remaining == 100_000 - 501
    assert 0 < during.percentage_used < 1


def test_unknown_route_and_wrong_method(sb: Harness) -> None:
    """Unknown paths are 404 and known paths with the wrong method 405, as FastAPI does."""
    assert sb.get("/v1/nothing").status_code == 404
    assert sb.get("/v1/validate").status_code == 405
