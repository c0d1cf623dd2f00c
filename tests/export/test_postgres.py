"""Export to a real PostgreSQL server: what PostgreSQL itself holds afterwards."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from adbc_driver_postgresql import dbapi

from placeflow.exporters.export import export
from placeflow.exporters.postgres import pg_type
from placeflow.store.warehouse import connect
from placeflow.support.redact import Secret
from tests.export.conftest import KEYS, TABLES, warehouse_rows
from tests.export.dataset import T0, add_run
from tests.pgserver import PgServer

NOW = T0 + timedelta(days=1)


def pg_rows(server: PgServer, table: str, extra: str = "") -> tuple[dict[str, str], list[Any]]:
    """PostgreSQL's own column types and rows of a table (JSON values parsed), ordered by key."""
    with dbapi.connect(server.url(with_password=True)) as con, con.cursor() as cur:
        cur.execute(
            "select column_name, data_type from information_schema.columns"
            f" where table_name = '{table}' order by ordinal_position"
        )
        types = {str(n): str(t) for n, t in cur.fetchall()}
        cur.execute(f"select *{extra} from {table} order by {KEYS[table]}")
        rows = [
            tuple(
                json.loads(v) if types.get(c[0]) == "jsonb" and v is not None else v
                for c, v in zip(cur.description, row, strict=True)
            )
            for row in cur.fetchall()
        ]
    return types, rows


_PG_NAMES = {
    "text": "text",
    "boolean": "boolean",
    "double precision": "double precision",
    "bigint": "bigint",
    "integer": "integer",
    "date": "date",
    "timestamptz": "timestamp with time zone",
    "jsonb": "jsonb",
}


def test_postgres_equals_warehouse(db: Path, pg_db: PgServer) -> None:
    """Each table lands with PostgreSQL types mapped from DuckDB's and the same values."""
    summary = export(db, pg_db.url(), TABLES, password=Secret(pg_db.password), now=NOW)
    assert summary.rows > 0
    for table in TABLES:
        duck_types, duck_rows = warehouse_rows(db, table)
        types, rows = pg_rows(pg_db, table)
        assert types == {n: _PG_NAMES[pg_type(t)] for n, t in duck_types}, table
        expected = [
            tuple(
                json.loads(v) if t == "JSON" and v is not None else v
                for (_, t), v in zip(duck_types, row, strict=True)
            )
            for row in duck_rows
        ]
        assert rows == expected, table
    with_hours = sum(1 for r in warehouse_rows(db, "places_latest")[1] if r[15] is not None)
    assert with_hours > 0
    assert pg_db.psql(
        "select count(*) from places_latest where opening_hours_value -> 'days' ? 'monday'"
    ).strip() == str(with_hours)


def test_incremental_postgres_writes_only_changed_rows(db: Path, pg_db: PgServer) -> None:
    """PostgreSQL's row versions (xmin) show an unchanged rerun wrote nothing and a refresh
    rewrote exactly the places it changed."""
    url, password = pg_db.url(), Secret(pg_db.password)
    export(db, url, ["places_latest"], password=password, now=NOW)
    _, first = pg_rows(pg_db, "places_latest", ", xmin::text")
    again = export(db, url, ["places_latest"], password=password, now=NOW + timedelta(hours=1))
    assert again.rows == 0
    assert pg_rows(pg_db, "places_latest", ", xmin::text")[1] == first

    con = connect(db)
    add_run(con, "run_c", first=50, last=70, at=NOW + timedelta(hours=2), salt=3)
    con.close()
    third = export(db, url, ["places_latest"], password=password, now=NOW + timedelta(hours=3))
    assert third.rows == 20
    _, after = pg_rows(pg_db, "places_latest", ", xmin::text")
    rewritten = [a[0] for a, b in zip(after, first, strict=True) if a[-1] != b[-1]]
    assert rewritten == [f"pk{i:07d}" for i in range(50, 70)]
    assert [r[:-1] for r in after] == [
        tuple(json.loads(v) if isinstance(v, str) and v.startswith("{") else v for v in r)
        for r in warehouse_rows(db, "places_latest")[1]
    ]


def test_full_postgres_export_upserts_everything(db: Path, pg_db: PgServer) -> None:
    """--full sends every row again and leaves one row per key."""
    url, password = pg_db.url(), Secret(pg_db.password)
    export(db, url, ["runs"], password=password, now=NOW)
    full = export(db, url, ["runs"], full=True, password=password, now=NOW + timedelta(hours=1))
    assert full.rows == 2
    assert pg_db.psql("select count(*), count(distinct run_id) from runs").strip() == "2|2"
