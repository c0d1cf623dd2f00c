"""Export to Parquet: what lands under the destination, read back by DuckDB from the files."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.exporters.export import TABLES as TABLES_REGISTRY
from placeflow.exporters.export import TableSpec, export
from placeflow.store.warehouse import connect
from tests.export.conftest import KEYS, TABLES, warehouse_rows
from tests.export.dataset import T0, add_run

NOW = T0 + timedelta(days=1)


def parquet_files(dest: Path) -> list[str]:
    return sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())


def read_files(
    dest: Path, table: str, files: list[str] | None = None
) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    paths = [str(dest / f) for f in files] if files else [str(dest / table / "*" / "*.parquet")]
    with duckdb.connect() as con:
        src = f"read_parquet({paths!r}, hive_partitioning = false)"
        types = [
            (str(r[0]), str(r[1])) for r in con.execute(f"describe select * from {src}").fetchall()
        ]
        rows = con.execute(f"select * from {src} order by {KEYS[table]}").fetchall()
    return types, rows


def test_parquet_equals_warehouse(db: Path, tmp_path: Path) -> None:
    """Every exported table's files hold the warehouse's rows, column by column, same types."""
    dest = tmp_path / "lake"
    summary = export(db, dest.as_uri(), TABLES, now=NOW)
    for table in TABLES:
        types, rows = warehouse_rows(db, table)
        assert read_files(dest, table) == (types, rows), table
        assert summary.tables[TABLES.index(table)].rows == len(rows)
    manifest = json.loads((dest / "_placeflow_manifest.json").read_text())
    listed = sorted(f["path"] for t in manifest["tables"].values() for f in t["files"])
    assert listed == [f for f in parquet_files(dest) if f.endswith(".parquet")]
    assert all("/export_date=2026-03-02/" in f for f in listed)
    assert not [f for f in parquet_files(dest) if f.endswith(".tmp")]


def test_second_export_sends_nothing_then_only_changes(db: Path, tmp_path: Path) -> None:
    """An unchanged warehouse writes no file; after a refresh, one file of exactly the changed
    places, and the newest row per key over all files is places_latest."""
    dest = tmp_path / "lake"
    export(db, str(dest), ["places_latest"], now=NOW)
    before = {f: (dest / f).read_bytes() for f in parquet_files(dest)}
    again = export(db, str(dest), ["places_latest"], now=NOW + timedelta(hours=1))
    assert again.rows == 0
    assert {f: (dest / f).read_bytes() for f in parquet_files(dest)} == before

    con = connect(db)
    add_run(con, "run_c", first=30, last=45, at=NOW + timedelta(hours=2), salt=7)
    con.close()
    third = export(db, str(dest), ["places_latest"], now=NOW + timedelta(hours=3))
    (table,) = third.tables
    assert table.rows == 15 and len(table.files) == 1
    _, rows = read_files(dest, "places_latest", list(table.files))
    assert [r[0] for r in rows] == [f"pk{i:07d}" for i in range(30, 45)]
    with duckdb.connect() as con2:
        files = f"read_parquet('{dest}/places_latest/*/*.parquet', hive_partitioning = false)"
        newest = con2.execute(
            "select * exclude (rn) from (select *, row_number() over (partition by place_key"
            f" order by outcome_at desc) as rn from {files}) where rn = 1 order by place_key"
        ).fetchall()
    assert newest == warehouse_rows(db, "places_latest")[1]


def test_full_export_replaces_the_files(db: Path, tmp_path: Path) -> None:
    """--full writes every row again in one file and removes the files it replaces."""
    dest = tmp_path / "lake"
    export(db, str(dest), ["places_latest"], now=NOW)
    con = connect(db)
    add_run(con, "run_c", first=0, last=5, at=NOW + timedelta(hours=2))
    con.close()
    export(db, str(dest), ["places_latest"], now=NOW + timedelta(hours=3))
    assert len([f for f in parquet_files(dest) if f.endswith(".parquet")]) == 2
    full = export(db, str(dest), ["places_latest"], full=True, now=NOW + timedelta(hours=4))
    assert [f for f in parquet_files(dest) if f.endswith(".parquet")] == list(full.tables[0].files)
    assert read_files(dest, "places_latest") == warehouse_rows(db, "places_latest")


def test_missing_table_is_named_not_exported(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registered table this warehouse lacks is reported missing; the others are exported."""
    monkeypatch.setitem(
        TABLES_REGISTRY, "place_scores", TableSpec("place_scores", ("place_key",), "scored_at")
    )
    summary = export(db, str(tmp_path / "lake"), ["places_latest", "place_scores"], now=NOW)
    assert summary.missing == ("place_scores",)
    assert [t.table for t in summary.tables] == ["places_latest"]
    assert not (tmp_path / "lake" / "place_scores").exists()
