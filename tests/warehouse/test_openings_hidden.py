"""A run being opened (migration 023: its plan's parts written before the transaction that
records it, its id in run_openings, no runs row) is no part of the warehouse yet: every view,
every check and the queries across runs read the same with its parts there as without them,
and differ once the run is recorded (so the comparison is not vacuous)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

import placeflow
from placeflow.emulator import DEFAULT_API_KEY, Sandbox, SandboxConfig
from placeflow.options import RunOptions
from placeflow.pipeline.known import any_known, known_places, new_block_keys
from placeflow.pipeline.notamatch import _is_key
from placeflow.runner.stale import WarehouseSource
from placeflow.state.checks import run_checks
from placeflow.store.warehouse import connect, sql_text
from tests.sandbox_target import sandbox_target
from tests.warehouse.sandbox_runs import SAMPLES, Runs, sample_head

T0 = datetime(2026, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
PARTS = ("run_rows", "rejects", "run_matches", "run_places")
"""The tables an opening writes its plan's parts to."""
RECORDED_VIEWS = ("crosswalk", "run_row_outcomes")
"""The views that show a recorded run's rows without any outcome of it."""
SEEING_CHECKS = (
    "chunk_rows_mismatch",
    "planned_place_not_submitted",
    "rejected_row_without_reject",
    "request_id_mismatch",
    "run_places_duplicate",
    "submitted_place_not_planned",
)
"""The checks that would see the openings' parts (each leaves them out)."""
READERS = ("known_places", "fresh_core_keys", "rekeyed_places", "is_key", "no_country")
"""The readers across runs beside the views and checks (`_snapshot`)."""
OPENINGS = {
    "run_20260420T000000_0be001": "r1",
    "run_20260420T000000_0be002": "r2",
    "run_20260420T000000_0be003": "r1",
}
"""The openings (ids of runs newer than r1 and r2, as a run opened after them has) and the run
each copies: whole (`_copy`), half (`_half`) and torn (`_torn`)."""
BAD_ROWS = "id,name,addr,city,phone,type\n9001,,1 main st.,los angeles,310/555-0100,american\n"
"""A row normalize rejects (no name): the runs have rejects too."""
FRESH_CORE = "zcore"
"""A core key no recorded place has: the candidate of it finds a place of an opening only."""


def _run(db: Path, inputs: list[Path], *, epoch: int, now: datetime) -> str:
    """One completed `placeflow.run` (fuzzy dedupe: run_matches too) against a sandbox."""
    sandbox = Sandbox(SandboxConfig(epoch=epoch, fail_rate=0.01))
    options = RunOptions(mode="enrich", force=True, route="job")
    with sandbox.serve() as served:
        target = sandbox_target(served.base_url, DEFAULT_API_KEY)
        summary = placeflow.run(
            [str(p) for p in inputs], options=options, db=db, target=target, clock=lambda: now
        )
    assert summary.status == "completed", summary.message
    return summary.run_id


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """r1: every sample and a rejected row at epoch 0; r2: the first 100 records again at
    epoch 1, 40 days later (changes, a second version of places, matches to r1's places)."""
    work = tmp_path_factory.mktemp("openings")
    db = work / "wh.duckdb"
    bad = work / "bad.csv"
    bad.write_text(BAD_ROWS, encoding="utf-8")
    ids = {
        "r1": _run(db, [*SAMPLES, bad], epoch=0, now=T0),
        "r2": _run(db, [sample_head(work / "head.csv", 100)], epoch=1, now=T0 + 40 * DAY),
    }
    con = connect(db)
    yield Runs(con, ids)
    con.close()


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "select view_name from duckdb_views() where not internal and schema_name = 'main'"
        " order by view_name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    return con.execute(f"select * from ({sql}) order by all", params).fetchall()


def _candidates(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """pf_fresh_candidates (and pf_fresh_outcomes) as the fresh stage makes them: the places
    of `run_id` under new keys ('x' before each), their core keys and region and postcode, and
    one of FRESH_CORE."""
    con.execute(
        "create or replace temp table pf_fresh_candidates as select 'x' || place_key as"
        " place_key, core_key, request ->> 'region' as region, request ->> 'postcode' as"
        " postcode from run_places where run_id = ?"
        " union all select 'xzcore', ?, null, null",
        [run_id, FRESH_CORE],
    )
    con.execute("create or replace temp view pf_fresh_outcomes as select * from place_outcomes")


def _snapshot(con: duckdb.DuckDBPyConnection, runs: Runs) -> dict[str, Any]:
    """Every view's rows, every check's count, and what the readers across runs answer."""
    found: dict[str, Any] = {f"view {v}": _rows(con, f"select * from {v}") for v in _views(con)}
    found |= {f"check {name}": n for name, n in run_checks(con).items()}
    keys = new_block_keys(
        con,
        "select * from run_rows where run_id = '{}' and disposition = 'submitted'".format(
            runs.ids["r1"]
        ),
    )
    found["known_places"] = known_places(con, keys).sort(pl.all()).rows()
    _candidates(con, runs.ids["r2"])
    signature = con.execute("select signature from runs where run_id = ?", [runs.ids["r2"]])
    at = {"signature": signature.fetchall()[0][0], "cutoff": T0 - DAY}
    found["fresh_core_keys"] = _rows(con, sql_text("queries/fresh_core_keys"), at)
    found["rekeyed_places"] = _rows(con, sql_text("queries/rekeyed_places"))
    first = con.execute(
        "select 'x' || place_key from run_rows where run_id = ? and place_key is not null"
        " order by row_ord limit 1",
        [runs.ids["r2"]],
    ).fetchall()[0][0]
    found["is_key"] = _is_key(con, str(first))
    source = WarehouseSource(":memory:", older_than=DAY, country="ZZ")
    found["no_country"] = source._no_country(con)
    return found


def _copy(con: duckdb.DuckDBPyConnection, opening: str, run_id: str) -> None:
    """A whole opening: `run_id`'s rows of the four tables under the id `opening`."""
    new = "$opening as run_id"
    matched = "case when matched_run_id = $run then $opening else matched_run_id end"
    replace = {"run_matches": f"{new}, {matched} as matched_run_id"}
    for table in PARTS:
        con.execute(
            f"insert into {table} by name select * replace ({replace.get(table, new)})"
            f" from {table} where run_id = $run",
            {"run": run_id, "opening": opening},
        )


def _half(con: duckdb.DuckDBPyConnection, opening: str, run_id: str) -> None:
    """An opening stopped halfway, of `run_id`'s places under new keys ('x' before each):
    every place, the first half of the rows, no rejects nor matches yet."""
    params = {"run": run_id, "opening": opening}
    con.execute(
        "insert into run_places by name select * replace ($opening as run_id, 'x' || place_key"
        " as place_key, json_merge_patch(request, json_object('id', 'x' || place_key))"
        " as request) from run_places where run_id = $run",
        params,
    )
    con.execute(
        "insert into run_rows by name select * replace ($opening as run_id, 'x' || place_key"
        " as place_key, 'x' || own_key as own_key, 'x' || outcome_key as outcome_key) from"
        " run_rows where run_id = $run"
        " and row_ord < (select count(*) / 2 from run_rows where run_id = $run)",
        params,
    )


def _torn(con: duckdb.DuckDBPyConnection, opening: str, run_id: str) -> None:
    """An opening whose parts hold what no recorded run may (a sweep deletes them whatever
    they hold): every row of `run_id` and no reject, and its first ten places alone, written
    twice, their requests' ids not their keys and their core key 'zcore' (FRESH_CORE)."""
    params = {"run": run_id, "opening": opening}
    con.execute(
        "insert into run_rows by name select * replace ($opening as run_id) from run_rows"
        " where run_id = $run",
        params,
    )
    for _ in range(2):
        con.execute(
            "insert into run_places by name select * replace ($opening as run_id, $core as"
            ' core_key, json_merge_patch(request, \'{"id": "pending"}\') as request)'
            " from run_places where run_id = $run order by chunk_no, position limit 10",
            params | {"core": FRESH_CORE},
        )


def test_an_opening_runs_parts_are_left_out_by_every_reader(warehouse: Runs) -> None:
    """With a whole copy of r1, a re-keyed half of r2 and a torn copy of r1 written as
    openings, every view, every check (all passing), known_places, fresh_core_keys,
    rekeyed_places, not-a-match's key test and a refresh's --country census read as before;
    recorded, the views of rows, the checks and those readers see them."""
    con = warehouse.con
    before = _snapshot(con, warehouse)
    assert not any(n for k, n in before.items() if k.startswith("check "))
    assert before["rekeyed_places"] and before["known_places"] and not before["is_key"]
    con.execute("begin transaction")
    try:
        whole, half, torn = OPENINGS
        _copy(con, whole, warehouse.ids["r1"])
        _half(con, half, warehouse.ids["r2"])
        _torn(con, torn, warehouse.ids["r1"])
        for opening in OPENINGS:
            con.execute("insert into run_openings values (?, 'host', 1, ?)", [opening, T0])
        opened = _snapshot(con, warehouse)
        seen = sorted(k for k in before if opened[k] != before[k])
        assert not seen, f"an opening's parts are read by {seen}"
        con.execute("delete from run_openings")
        for opening, label in OPENINGS.items():
            con.execute(
                "insert into runs by name select * replace (? as run_id, 'running' as status)"
                " from runs where run_id = ?",
                [opening, warehouse.ids[label]],
            )
        recorded = _snapshot(con, warehouse)
    finally:
        con.execute("rollback")
    changed = {k for k in before if recorded[k] != before[k]}
    assert {f"view {v}" for v in RECORDED_VIEWS} <= changed
    assert {f"check {c}" for c in SEEING_CHECKS} <= changed
    assert set(READERS) <= changed


def test_no_earlier_run_is_known_while_the_only_rows_are_an_openings(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """any_known (whether the fuzzy pass looks the warehouse up) is false on a warehouse whose
    only rows are an opening's parts, true once that run is recorded."""
    con.execute(
        "insert into run_rows (run_id, row_ord, source_file, source_row, place_key, disposition)"
        " values ('o1', 0, 'in.csv', 1, 'A', 'submitted')"
    )
    con.execute("insert into run_openings values ('o1', 'host', 1, ?)", [T0])
    assert not any_known(con)
    con.execute("delete from run_openings")
    assert any_known(con)


def test_a_reader_of_a_warehouse_from_before_openings_reads_across_runs(tmp_path: Path) -> None:
    """A read-only connection (a preview, a report) to a warehouse from before migration 023,
    which it cannot migrate, reads the queries that leave openings out (an empty stand-in)."""
    db = tmp_path / "old.duckdb"
    with connect(db) as writer:
        writer.execute(
            "insert into run_rows (run_id, row_ord, source_file, source_row, place_key,"
            " disposition) values ('r1', 0, 'in.csv', 1, 'A', 'submitted')"
        )
        writer.execute("drop table run_openings")
    with connect(db, read_only=True) as reader:
        assert any_known(reader)
        assert _is_key(reader, "A")
