"""Planning: exact requests, routes, chunks that keep every place once and in order, estimates."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placeflow.api.models import PricingCard, PricingRate
from placeflow.options import RunOptions
from placeflow.pipeline.plan import build_requests, choose_route, estimate, plan_chunks
from placeflow.state.records import chunk_body, content_hash, idempotency_key


def unique_places(n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "row_ord": list(range(n)),
            "place_key": [f"pk_{i:024x}" for i in range(n)],
            "poi_name": [f"Caf\u00e9 \u201c{i}\u201d" for i in range(n)],
            "street": [None] * n,
            "address": ["1 Rue X"] * n,
            "city": ["Paris"] * n,
            "region": [None] * n,
            "postcode": ["75001"] * n,
            "country": ["FR"] * n,
            "latitude": [48.85] * n,
            "longitude": [2.35] * n,
        },
        schema_overrides={"street": pl.String, "region": pl.String},
    )


def test_requests_carry_the_place_key_as_id_and_the_enrich_options() -> None:
    """Each request is the place's fields, its place_key as id, and the run's attributes."""
    options = RunOptions(mode="enrich", attributes=("phone", "website"), include_summary=True)
    (request,) = build_requests(unique_places(1), options)["request"].to_list()
    body = json.loads(request)
    assert body["id"] == "pk_" + "0" * 24 and body["poi_name"] == "Caf\u00e9 \u201c0\u201d"
    assert body["attributes"] == ["phone", "website"] and body["include_summary"] is True
    assert "attributes" not in json.loads(
        build_requests(unique_places(1), RunOptions(mode="validate"))["request"][0]
    )


@pytest.mark.parametrize(
    ("mode", "places", "route"),
    [
        ("enrich", 20, "sync"),
        ("enrich", 21, "job"),
        ("validate", 2, "sync"),
        ("validate", 3, "job"),
    ],
)
def test_auto_route_takes_the_fewest_requests(mode: str, places: int, route: str) -> None:
    """Synchronous calls only while they need strictly fewer requests than a job's three (a
    job is idempotent, a synchronous call is not), else a job."""
    assert choose_route(places, RunOptions(mode=mode)) == route  # type: ignore[arg-type]  # str modes


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 200),
    size=st.integers(1, 50),
    mode=st.sampled_from(["enrich", "validate"]),
    route=st.sampled_from(["auto", "job", "sync"]),
)
def test_chunking_keeps_every_place_once_in_order(n: int, size: int, mode: str, route: str) -> None:
    """Whatever the size and route, chunks cover every place exactly once, in their order."""
    options = RunOptions(mode=mode, chunk_rows=size, route=route)  # type: ignore[arg-type]  # drawn str
    plan = plan_chunks(build_requests(unique_places(n), options), options)
    assert plan["place_key"].to_list() == [f"pk_{i:024x}" for i in range(n)]
    ordered = plan.sort("chunk_no", "position")["place_key"].to_list()
    assert ordered == plan["place_key"].to_list()
    limit = size if plan["route"].first() == "job" else (10 if mode == "enrich" else 1)
    if n:
        assert plan.group_by("chunk_no").len()["len"].max() <= limit  # type: ignore[operator]  # an int here


def test_chunk_identity_is_deterministic() -> None:
    """The same chunk content gives the same hash and key; another run gets another key."""
    requests = build_requests(unique_places(3), RunOptions())["request"].to_list()
    digest = content_hash(requests)
    assert digest == content_hash(list(requests))
    assert chunk_body(requests).startswith(b'{"pois":[{')
    assert idempotency_key("run_a", 0, digest) == idempotency_key("run_a", 0, digest)
    assert idempotency_key("run_a", 0, digest) != idempotency_key("run_b", 0, digest)


def test_estimate_uses_the_pricing_card() -> None:
    """The estimate is places times the card's rate for the route, and a job's request floor."""
    card = PricingCard(
        unit="credits",
        packs_url="x",
        rates=[
            PricingRate(key="job_enrich", label="", credits=2, per="row"),
            PricingRate(key="enrich", label="", credits=1, per="place"),
        ],
    )
    big = estimate(25_000, RunOptions(), card)
    assert (big.route, big.credits, big.requests) == ("job", 50_000, 9)
    small = estimate(12, RunOptions(), card)
    assert (small.route, small.credits, small.requests) == ("sync", 12, 2)
    assert estimate(12, RunOptions(), None).credits == 12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "enrich", "attributes": ("fax",)}, "unknown attribute"),
        ({"mode": "validate", "attributes": ("phone",)}, "enrich only"),
        ({"chunk_rows": 10_001}, "chunk rows"),
        ({"max_credits": -1}, "max-credits"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    """Options outside the spec's limits are refused with a message."""
    with pytest.raises(ValueError, match=message):
        RunOptions(**kwargs)  # type: ignore[arg-type]  # bad values on purpose
