"""Staging: tables moved from a scratch database into another staging, memory kept low."""

from __future__ import annotations

import duckdb
import polars as pl

from placeflow.options import RunOptions
from placeflow.pipeline.plan import PLAN_MEMORY, plan
from placeflow.pipeline.staging import MOVE_INTO_LIMIT, MOVE_LIMIT, Staging
from placeflow.state.records import MARKED, REQUESTS
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
    DuckDB capped at MOVE_LIMIT and the target's at MOVE_INTO_LIMIT (two pools are not both full
    at once), the writer's cap back on both after."""
    with Staging.scratch() as source, Staging.scratch() as target:
        source.append("pf_t", pl.DataFrame({"row_ord": range(1000), "v": ["x"] * 1000}))
        seen: list[str] = []
        create = target.create

        def spying(table: str, sql: str, params: dict[str, object] | None = None) -> None:
            seen.append(_limit(source.con.cursor()))  # the open scan holds con itself
            seen.append(_limit(target.con))
            create(table, sql, params)

        target.create = spying  # type: ignore[method-assign]  # a spy on the copy
        source.move_to(target, "pf_t")
        assert target.count("pf_t") == 1000
        assert not source.exists("pf_t")
        assert seen == [_as_duckdb_says(MOVE_LIMIT), _as_duckdb_says(MOVE_INTO_LIMIT)]
        writers = _as_duckdb_says(WAREHOUSE_SETTINGS["memory_limit"])
        assert _limit(source.con) == writers and _limit(target.con) == writers


def test_plan_runs_under_its_memory_cap() -> None:
    """The plan stage appends every place's request with DuckDB capped at PLAN_MEMORY (its
    requests spill rather than fill the staging's pool), the writer's cap back after."""
    n = 25
    text = pl.Series(["x"] * n)
    marked = pl.DataFrame(
        {
            "row_ord": range(n), "place_key": [f"k{i}" for i in range(n)],
            "poi_name": [f"Shop {i}" for i in range(n)], "street": text, "address": text,
            "city": text, "region": text, "postcode": text, "country": ["US"] * n,
            "latitude": [1.0] * n, "longitude": [2.0] * n, "core_key": text,
            "disposition": ["submitted"] * n,
        }
    )  # fmt: skip
    with Staging.scratch() as staging:
        staging.append(MARKED, marked)
        seen: list[str] = []
        append = staging.append

        def spying(table: str, frame: pl.DataFrame) -> None:
            seen.append(_limit(staging.con))
            append(table, frame)

        staging.append = spying  # type: ignore[method-assign]  # a spy on the appends
        _, info = plan(staging, RunOptions(route="job", chunk_rows=10, batch_rows=10))
        assert info.places == n and info.chunks == 3
        assert staging.count(REQUESTS) == n
        assert set(seen) == {_as_duckdb_says(PLAN_MEMORY)}
        assert _limit(staging.con) == _as_duckdb_says(WAREHOUSE_SETTINGS["memory_limit"])


def test_a_move_out_of_a_pool_that_cannot_shrink_runs_at_its_own_cap() -> None:
    """A source holding more than MOVE_LIMIT that it cannot give up (here: a database with
    nowhere to spill; at ten million places, a plan of gigabytes) keeps its own cap for the
    move, which copies every row, instead of failing the run; its cap is as before after."""
    con = duckdb.connect(":memory:", config={"temp_directory": ""})
    try:
        source = Staging(con, warehouse=False)
        con.execute(
            "create temp table pf_t as select range as row_ord,"
            " repeat('x', 100) || range::varchar as v from range(2000000)"
        )
        own = _limit(con)
        with Staging.scratch() as target:
            source.move_to(target, "pf_t")
            assert target.count("pf_t") == 2_000_000
        assert _limit(con) == own
    finally:
        con.close()
