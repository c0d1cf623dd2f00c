"""Contract: validate, enrich and enrich-batch: shapes, limits, 400/402/422 and what they charge."""

from __future__ import annotations

from typing import Any

import pytest

from placeflow.api.models import (
    POIEnrichBatchResponse,
    POIEnrichResponse,
    POIValidateResponse,
)
from placeflow.emulator import KeySpec

from .conftest import KEY, Harness, MakeHarness, place

LIMIT_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/v1/validate", {"poi_name": ""}, "poi_name"),
    ("/v1/validate", {"poi_name": "x" * 201}, "poi_name"),
    ("/v1/validate", {"id": "i" * 101}, "id"),
    ("/v1/validate", {"address": "a" * 501}, "address"),
    ("/v1/validate", {"street": "s" * 301}, "street"),
    ("/v1/validate", {"city": "c" * 201}, "city"),
    ("/v1/validate", {"region": "r" * 201}, "region"),
    ("/v1/validate", {"postcode": "p" * 41}, "postcode"),
    ("/v1/validate", {"country": "USA"}, "country"),
    ("/v1/validate", {"latitude": 90.5, "longitude": 1}, "latitude"),
    ("/v1/validate", {"latitude": 1, "longitude": -180.01}, "longitude"),
    ("/v1/enrich", {"attributes": []}, "attributes"),
    ("/v1/enrich", {"attributes": ["phone"] * 10}, "attributes"),
    ("/v1/enrich", {"attributes": ["phone", "fax"]}, "attributes[1]"),
    ("/v1/enrich", {"response_format": "table"}, "response_format"),
]


@pytest.mark.parametrize(("path", "override", "field"), LIMIT_CASES)
def test_limits_rejected_with_400_naming_the_field(
    sb: Harness, path: str, override: dict[str, Any], field: str
) -> None:
    """Each stated limit, just past it, is a 400 VALIDATION_ERROR naming the field, free."""
    r = sb.post(path, place(**override))
    assert r.status_code == 400
    body = r.json()
    assert body["success"] is False and body["error_code"] == "VALIDATION_ERROR"
    assert body["request_id"] and body["validation_timestamp"]
    assert [d["field"] for d in body["detail"]] == [field]
    assert set(body["detail"][0]) == {"field", "message", "type"}
    assert sb.credits()["charged"] == 0


def test_values_at_the_limits_are_accepted(sb: Harness) -> None:
    """Values exactly at every stated limit pass."""
    at_limit = place(
        poi_name="n" * 200,
        id="i" * 100,
        address="a" * 500,
        street="s" * 300,
        city="c" * 200,
        region="r" * 200,
        postcode="p" * 40,
        country="us",
        latitude=-90,
        longitude=180,
    )
    assert sb.post("/v1/validate", at_limit).status_code == 200
    r = sb.post(
        "/v1/enrich",
        place(
            attributes=[
                "opening_hours",
                "phone",
                "website",
                "facebook",
                "instagram",
                "tiktok",
                "email",
                "existence",
                "open_closed",
            ],
            street="s" * 1000,
        ),
    )
    assert r.status_code == 200
    assert sb.credits()["charged"] == 2


def test_freeform_address_alias_is_accepted(sb: Harness) -> None:
    """`freeform_address` is an input alias of `address`."""
    r = sb.post("/v1/validate", {"poi_name": "Blue Bottle", "freeform_address": "1 Ferry Bldg, SF"})
    assert r.status_code == 200


def test_invalid_json_is_400(sb: Harness) -> None:
    """A body that is not JSON is a 400 naming the body."""
    r = sb.http.post("/v1/validate", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["detail"][0]["field"] == "body"


def test_validate_returns_the_response_contract_and_charges_one(sb: Harness) -> None:
    """A validation answers POIValidateResponse with the id passed through, for 1 credit."""
    r = sb.post("/v1/validate", place(7))
    assert r.status_code == 200
    body = POIValidateResponse.model_validate(r.json())
    assert body.id == "p7" and body.request_id and body.validation_timestamp
    assert sb.credits()["charged"] == (1 if body.success else 0)


def test_enrich_default_attributes_and_summary(sb: Harness) -> None:
    """Without attributes the default five are answered; place_summary only when asked."""
    plain = POIEnrichResponse.model_validate(sb.post("/v1/enrich", place(3)).json())
    summary = POIEnrichResponse.model_validate(
        sb.post("/v1/enrich", place(3, include_summary=True)).json()
    )
    if plain.success:
        assert plain.attributes is not None
        assert set(plain.attributes) == {"opening_hours", "phone", "website"}
        assert plain.operational_status is not None and plain.place_summary is None
        assert summary.place_summary
    assert sb.credits()["charged"] == plain.success + summary.success


def test_enrich_cell_format(sb: Harness) -> None:
    """response_format cell answers ResultCells with a status."""
    ok = 0
    for i in range(20):
        r = POIEnrichResponse.model_validate(
            sb.post("/v1/enrich", place(i, attributes=["phone"], response_format="cell")).json()
        )
        if r.success:
            ok += 1
            assert r.attributes is not None and r.attributes["phone"] is not None
            assert r.attributes["phone"].status in (
                "confirmed",
                "estimated",
                "unconfirmed",
                "cost_capped",
                "rejected",
            )
        sb.tick()
    assert ok > 0


def test_unresolvable_coordinates_422_without_charge(sb: Harness) -> None:
    """A coordinates-only enrich the service cannot resolve is 422 with error and request_id."""
    r = sb.post("/v1/enrich", {"poi_name": "Somewhere", "latitude": 0.0, "longitude": 0.0})
    assert r.status_code == 422
    body = r.json()
    assert body["error_code"] == "VALIDATION_ERROR" and body["request_id"] and body["error"]
    assert not body.get("detail")
    assert sb.credits()["charged"] == 0


def test_enrich_batch_item_failure_does_not_fail_the_batch(sb: Harness) -> None:
    """One unresolvable item has success false and VALIDATION_ERROR; the others are answered."""
    pois = [place(i) for i in range(4)]
    pois.insert(2, {"poi_name": "Null Island", "latitude": 0.0, "longitude": 0.0})
    r = sb.post("/v1/enrich-batch", {"pois": pois})
    assert r.status_code == 200
    body = POIEnrichBatchResponse.model_validate(r.json())
    assert len(body.results) == 5 and body.stats is not None
    assert body.results[2].success is False
    assert body.results[2].error_code == "VALIDATION_ERROR"
    assert [res.id for res in body.results] == [p.get("id") for p in pois]
    assert body.stats.total == 5 and body.stats.failed >= 1
    assert sb.credits()["charged"] == body.stats.successful


@pytest.mark.parametrize("n", [0, 11])
def test_enrich_batch_size_limits(sb: Harness, n: int) -> None:
    """enrich-batch with zero or more than ten places is a 400."""
    r = sb.post("/v1/enrich-batch", {"pois": [place(i) for i in range(n)]})
    assert r.status_code == 400 and r.json()["detail"][0]["field"] == "pois"


def test_402_when_balance_cannot_cover_the_request(make_harness: MakeHarness) -> None:
    """A request the available balance cannot cover is 402 with needed and available credits."""
    h = make_harness(keys=(KeySpec(key=KEY, credits=3),))
    r = h.post("/v1/enrich-batch", {"pois": [place(i) for i in range(4)]})
    assert r.status_code == 402
    detail = r.json()["detail"]
    assert detail["needed_credits"] == 4 and detail["available_credits"] == 3
    assert r.json()["error_code"] == "INSUFFICIENT_CREDITS"
    assert h.credits()["charged"] == 0
