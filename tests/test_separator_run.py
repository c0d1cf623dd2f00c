"""A run of a ';'-separated cp1252 file (Excel's CSV in many locales): the places the sandbox
received are the file's own, and the run's rows show the file's columns read the same way,
whether --separator is given or found in the header line."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import placeflow
from placeflow.emulator import backend
from placeflow.options import RunOptions
from placeflow.reporting.rows import row_outcomes
from tests.sandbox_target import served as served_sandbox

KEY = "sk_separator_run_paid_key_1234"
PLACES = [
    ("c1", "Crème Brûlée; Café", "12 Rue de l'Église", "Paris", "FR", "48,8566", "2,3522",
     "+33 1 23 45 67 89"),
    ("c2", "Brasserie Zürich", "3 Bahnhofstraße", "Zürich", "CH", "47,3769", "8,5417",
     "+41 44 000 00 00"),
    ("c3", "Señor Taco", "9 Calle Mayor", "Madrid", "ES", "40,4168", "-3,7038",
     "+34 91 000 00 00"),
]  # fmt: skip
"""As Excel writes them in many locales: ';' between values, decimal commas."""


@pytest.mark.parametrize("separator", [";", None])
def test_a_semicolon_cp1252_file_sends_its_own_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, separator: str | None
) -> None:
    """With --separator ';', or without it (found in the header line), the same places reach
    the sandbox, and `placeflow rows` reads the file again alike."""
    path = tmp_path / "export.csv"
    with path.open("w", encoding="cp1252", newline="") as handle:
        writer = csv.writer(handle, delimiter=";")
        writer.writerow(["id", "name", "street", "city", "country", "lat", "lon", "phone"])
        writer.writerows(PLACES)
    db = tmp_path / "wh.duckdb"
    options = RunOptions(route="job", dedupe="exact", encoding="cp1252", separator=separator)
    received: list[dict[str, str]] = []
    parsed = backend.place_dicts

    def places_as_the_sandbox_parsed_them(pois: Any) -> list[dict[str, Any]]:
        places = parsed(pois)  # a job's places, parsed from the POST (a finished job keeps none)
        received.extend(places)
        return places

    monkeypatch.setattr(backend, "place_dicts", places_as_the_sandbox_parsed_them)
    with served_sandbox(KEY) as (sandbox, target):
        summary = placeflow.run([str(path)], options=options, db=db, target=target)
        charged = sandbox.stats()["keys"][KEY]["credits"]["charged"]
    assert summary.status == "completed" and summary.succeeded + summary.failed == 3
    assert charged == summary.charged == summary.succeeded
    assert sorted(p["poi_name"] for p in received) == sorted(p[1] for p in PLACES)
    assert {p["city"] for p in received} == {"Paris", "Zürich", "Madrid"}
    coordinates = {p["poi_name"]: (p["latitude"], p["longitude"]) for p in received}
    assert coordinates["Señor Taco"] == (40.4168, -3.7038)
    assert coordinates["Brasserie Zürich"] == (47.3769, 8.5417)

    rows = row_outcomes(db, summary.run_id).sort("source_row")
    assert rows.get_column("phone").to_list() == [p[7] for p in PLACES]
    assert rows.get_column("lat").to_list() == [p[5] for p in PLACES]
    assert rows.get_column("name").to_list() == [p[1] for p in PLACES]
