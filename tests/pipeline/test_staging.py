"""Staging: tables moved from a scratch database into another staging, memory kept low."""

from __future__ import annotations

import duckdb
import polars as pl

from placeflow.pipeline.staging import MOVE_LIMIT, Staging
from placeflow.store.warehouse import WAREHOUSE_SETTINGS


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.execute("select current_setting('memory_limit')").fetchall()[0][0])


def _as_duckdb_says(value: str) -> str:
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"set memory_limit = '{value}'")
        return _limit(con)
    finally:
        con.close()


def test_move_reads_the_source_under_the_move_cap() -> None:
    """move_to copies every row, drops the source's table, and scans it with the source's
    DuckDB capped at MOVE_LIMIT (its pool and the target's are not both full at once), the
    writer's cap back after."""
    with Staging.scratch() as source, Staging.scratch() as target:
        source.append("pf_t", pl.DataFrame({"row_ord": range(1000), "v": ["x"] * 1000}))
        seen: list[str] = []
        create = target.create

        def spying(table: str, sql: str, params: dict[str, object] | None = None) -> None:
            seen.append(_limit(source.con.cursor()))  # the open scan holds con itself
            create(table, sql, params)

        target.create = spying  # type: ignore[method-assign]  # a spy on the copy
        source.move_to(target, "pf_t")
        assert target.count("pf_t") == 1000
        assert not source.exists("pf_t")
        assert seen == [_as_duckdb_says(MOVE_LIMIT)]
        assert _limit(source.con) == _as_duckdb_says(WAREHOUSE_SETTINGS["memory_limit"])
