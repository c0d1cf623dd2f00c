"""Delta exports that meet (#44 item 2): two first exports to one path at the same moment leave
each place once (Delta's own commit protocol: the table created once, a merge that finds
another's commit run again), and `--full` repairs a table that holds a place twice."""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

from placeflow.exporters import export as export_module
from placeflow.exporters.export import export, plan_table
from tests.export.conftest import PLACES
from tests.export.dataset import T0

NOW = T0 + timedelta(days=1)
TABLES = ["places_latest", "runs"]


def keys(root: Path, table: str, key: str) -> Counter[str]:
    """How many rows of the Delta table hold each key."""
    rows = DeltaTable(str(root / table)).to_pyarrow_table().column(key).to_pylist()
    return Counter(str(k) for k in rows)


def test_two_first_exports_at_once_leave_each_place_once(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two exports (two warehouses with the same places, as two machines have) both plan the
    table while it does not exist yet, then write it together: every place is there once."""
    other = tmp_path / "other.duckdb"
    shutil.copy(db, other)
    lake = tmp_path / "lake"
    planned = threading.Barrier(2, timeout=60)

    def plan_then_meet(*args: Any, **kwargs: Any) -> Any:
        plan = plan_table(*args, **kwargs)
        planned.wait()  # both have read their plan before either writes the table
        return plan

    monkeypatch.setattr(export_module, "plan_table", plan_then_meet)
    failures: list[BaseException] = []

    def one(warehouse: Path) -> None:
        try:
            export(warehouse, f"delta://{lake}", TABLES, now=NOW)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(w,)) for w in (db, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures, failures
    places = keys(lake, "places_latest", "place_key")
    assert len(places) == PLACES and set(places.values()) == {1}
    assert set(keys(lake, "runs", "run_id").values()) == {1}


def test_a_full_export_repairs_a_table_holding_a_place_twice(db: Path, tmp_path: Path) -> None:
    """A table written twice by blind appends (as two first exports once left it): an
    incremental export leaves it so, `--full` leaves each place once."""
    lake = tmp_path / "lake"
    export(db, f"delta://{lake}", ["places_latest"], now=NOW)
    table = DeltaTable(str(lake / "places_latest")).to_pyarrow_table()
    write_deltalake(str(lake / "places_latest"), table, mode="append")
    assert set(keys(lake, "places_latest", "place_key").values()) == {2}
    export(db, f"delta://{lake}", ["places_latest"], full=True, now=NOW + timedelta(hours=1))
    places = keys(lake, "places_latest", "place_key")
    assert len(places) == PLACES and set(places.values()) == {1}
