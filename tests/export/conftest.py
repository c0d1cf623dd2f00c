"""Export fixtures: a real PostgreSQL server for the session (initdb/pg_ctl in a temp dir),
small warehouses built straight into the schema, and helpers that read back what landed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.store.warehouse import connect
from tests.export.dataset import build
from tests.pgserver import PgServer, PostgresUnavailable, start

PLACES = 120
TABLES = ["places_latest", "runs", "credit_ledger"]
KEYS = {"places_latest": "place_key", "runs": "run_id", "credit_ledger": "run_id, ref, kind"}


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    """One PostgreSQL server for the session; in CI a missing server fails, never skips."""
    try:
        with start() as server:
            yield server
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a real PostgreSQL for the export tests: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated warehouse with two runs, built once and copied per test."""
    path = tmp_path_factory.mktemp("template") / "warehouse.duckdb"
    con = connect(path)
    try:
        build(con, PLACES)
    finally:
        con.close()
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "warehouse.duckdb"
    shutil.copy(template, target)
    return target


_counter = iter(range(1_000_000))


@pytest.fixture
def pg_db(pg: PgServer) -> PgServer:
    """A fresh database on the session's server (each test its own destination)."""
    name = f"t{next(_counter)}_{os.getpid()}"
    pg.psql(f"create database {name}")
    return PgServer(pg.host, pg.port, pg.user, pg.password, name, pg.socket_dir, pg.bin_dir)


def warehouse_rows(db: Path, table: str) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    """(column name, DuckDB type) and every row of a warehouse table, ordered by key."""
    with duckdb.connect(str(db), read_only=True) as con:
        types = [(str(r[0]), str(r[1])) for r in con.execute(f"describe {table}").fetchall()]
        rows = con.execute(f"select * from {table} order by {KEYS[table]}").fetchall()
    return types, rows
