"""The sandbox's parsed places: the dicts a bulk job renders from are what model_dump makes."""

from __future__ import annotations

import json

import pytest

from placeflow.api.models import EnrichJobSubmit, ValidateJobSubmit
from placeflow.emulator.backend import place_dicts

PLACES = [
    {"poi_name": "A"},
    {
        "id": "pk_1",
        "poi_name": "Caf\u00e9",
        "street": "1 Rue X",
        "freeform_address": "1 Rue X, Paris",
        "city": "Paris",
        "region": "IDF",
        "postcode": "75001",
        "country": "fr",
        "latitude": 48,
        "longitude": 2.35,
        "attributes": ["phone", "website", "phone"],
        "include_summary": True,
        "response_format": "cell",
        "unknown": {"ignored": True},
    },
]


@pytest.mark.parametrize("model", [ValidateJobSubmit, EnrichJobSubmit])
def test_place_dicts_equal_model_dump_field_for_field(
    model: type[ValidateJobSubmit | EnrichJobSubmit],
) -> None:
    """Every field, its value, its type and the key order match model_dump's, aliases and
    defaults resolved and unknown fields dropped, for both job models."""
    parsed = model.model_validate_json(json.dumps({"pois": PLACES}))
    dumped = parsed.model_dump()["pois"]
    got = place_dicts(parsed.pois)
    assert got == dumped
    assert [list(d) for d in got] == [list(d) for d in dumped]
    assert [[type(v) for v in d.values()] for d in got] == [
        [type(v) for v in d.values()] for d in dumped
    ]
