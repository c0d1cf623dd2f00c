"""The warehouse's checks: each file of sql/checks/ is a query that returns zero rows when all
is well (one purpose each), for one run or for every run."""

from __future__ import annotations

import duckdb

from placeflow.store.warehouse import sql_names, sql_text


def check_names() -> list[str]:
    """The checks of sql/checks/, by file name."""
    return sql_names("checks")


def check_rows(con: duckdb.DuckDBPyConnection, name: str, run_id: str | None = None) -> int:
    """How many rows one check returns (0 = pass), for one run or for all."""
    body = sql_text(f"checks/{name}").strip().rstrip(";")
    query = (
        f"select count(*) from ({body}\n) as check_rows"  # noqa: S608 - our own files
        " where cast($run_id as varchar) is null or check_rows.run_id = $run_id"
    )
    row = con.execute(query, {"run_id": run_id}).fetchone()
    return int(row[0]) if row else 0


def run_checks(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> dict[str, int]:
    """Every check of sql/checks/: name -> rows returned (0 = pass)."""
    return {name: check_rows(con, name, run_id) for name in check_names()}
