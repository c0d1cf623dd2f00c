"""The warehouse's own places keep their keys when they are sent again. Two departments listed at
one address with two phones are two places (dedupe_phones.sql gives each a key of its own from
its phone); the stored request carries no phone, so a refresh or a research of the warehouse's
places that keyed them anew from their fields would file both answers under a third key. They
are sent, answered and recorded under the keys the run gave them."""

from __future__ import annotations

import csv
from datetime import timedelta
from pathlib import Path

import duckdb

import placeflow
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.runner.refresh import WarehouseSource, refresh
from placeflow.runner.research import ResearchOptions, research
from tests.sandbox_target import served

KEY = "sk_warehouse_keys_paid_key_77"
ROWS = [
    ("d1", "Mercy Clinic", "12 Harbor Rd", "Portland", "US", "503-555-0101"),
    ("d2", "Mercy Clinic", "12 Harbor Rd", "Portland", "US", "503-555-0177"),
    ("d3", "Harbor Books", "14 Harbor Rd", "Portland", "US", "503-555-0123"),
]
"""Two departments of one clinic at one address (two phones), and a shop next door."""


def _keys(db: Path, table: str, run_id: str | None = None) -> set[str]:
    where, params = ("", []) if run_id is None else (" where run_id = ?", [run_id])
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(f"select distinct place_key from {table}{where}", params).fetchall()
    return {str(k) for (k,) in found}


def test_a_refresh_and_a_research_send_the_warehouse_places_under_their_own_keys(
    tmp_path: Path,
) -> None:
    path = tmp_path / "clinics.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "street", "city", "country", "phone"])
        writer.writerows(ROWS)
    db = tmp_path / "wh.duckdb"
    with served(KEY) as (sandbox, target):
        first = placeflow.run([str(path)], options=placeflow.RunOptions(route="sync"), db=db,
                              target=target)  # fmt: skip
        assert first.status == "completed" and first.submitted == 3
        keys = _keys(db, "run_places", first.run_id)
        assert len(keys) == 3

        again = refresh(db=db, older_than="0", target=target)
        assert again.status == "completed" and again.submitted == 3
        assert _keys(db, "run_places", again.run_id) == keys
        charged = sandbox.stats()["keys"][KEY]["credits"]["charged"]
        assert charged == first.charged + again.charged and again.charged == 3

        options = ResearchOptions(spec=ResearchSpec(build_specs(("owner_person",))))
        out = research(WarehouseSource(db, older_than=timedelta(0)), options, target=target,
                       db=db, sleep=lambda s: None)  # fmt: skip
        assert out.status == "completed" and out.submitted == 3, out
    assert _keys(db, "research_answers") == keys
