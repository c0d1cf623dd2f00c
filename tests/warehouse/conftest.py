"""One migrated in-memory warehouse for the session, emptied before each test that uses it.

Migrating takes a fifth of a second (hundreds of DDL and comment statements); emptying the
tables takes milliseconds. Tests of connect and migrate open their own databases.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from placeflow.store import warehouse
from placeflow.store.warehouse import connect


@pytest.fixture(scope="session")
def shared_warehouse() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = connect(":memory:")
    yield connection
    connection.close()


@pytest.fixture
def con(shared_warehouse: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The session's warehouse, emptied: no rows, no temp tables, no open transaction."""
    c = shared_warehouse
    if warehouse.in_transaction(c):
        c.execute("rollback")
    tables = c.execute("select table_name, temporary from duckdb_tables()").fetchall()
    for name, temporary in tables:
        if temporary:
            c.execute(f"drop table {name}")
        elif name != "schema_migrations":
            c.execute(f"delete from {name}")
    known = [v for v, _ in warehouse.migrations()]
    c.execute("delete from schema_migrations where not list_contains(?, version)", [known])
    return c
