"""connect, migrations, documentation, the one-writer lock, transactions and frames."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.errors import MigrationError, WarehouseBusy
from placeflow.fields import RateLimits
from placeflow.store import warehouse, writer
from placeflow.store.warehouse import (
    connect,
    insert_frame,
    migrate,
    sql_text,
    transaction,
)

TABLES = {
    "runs", "run_rows", "rejects", "run_places", "jobs", "validations", "enrichments",
    "credit_ledger", "schema_migrations", "billing_readings", "place_changes", "not_a_match",
    "export_state", "export_log", "research_requests", "research_answers", "run_matches",
    "view_set", "budgets", "run_openings",
}  # fmt: skip
VIEWS = {
    "place_outcomes", "places_latest", "run_credits", "place_facts", "place_history",
    "place_claims", "research_latest", "run_row_outcomes", "crosswalk",
    "research_runs", "research_ledger",  # runs and credit_ledger in their pre-017 shapes
}  # fmt: skip


def test_connect_creates_the_database_and_its_parent(tmp_path: Path) -> None:
    """A writable connect creates the missing folder and file, with every table and view."""
    path = tmp_path / "deep" / "er" / "w.duckdb"
    con = connect(path)
    tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
    views = {
        r[0]
        for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()
    }
    con.close()
    assert path.is_file()
    assert tables == TABLES
    assert views == VIEWS


def test_migrations_are_versioned_and_idempotent(tmp_path: Path) -> None:
    """Each migration is applied once and recorded; later migrates and connects apply nothing."""
    path = tmp_path / "w.duckdb"
    con = connect(path)
    assert migrate(con) == []
    rows = con.execute("select version, name from schema_migrations order by version").fetchall()
    con.close()
    assert rows == warehouse.migrations()
    assert rows[0] == ("001", "init")
    con = connect(path)
    assert con.execute("select count(*) from schema_migrations").fetchone() == (len(rows),)
    con.close()


def test_migrate_applies_pending_migrations_in_order() -> None:
    """On an empty database migrate applies every migration, in version order."""
    con = duckdb.connect(":memory:")
    assert migrate(con) == [v for v, _ in warehouse.migrations()]
    assert migrate(con) == []


def test_unknown_applied_migration_is_refused(con: duckdb.DuckDBPyConnection) -> None:
    """A database migrated by a newer placeflow is refused rather than misread."""
    con.execute("insert into schema_migrations values ('999', 'future', now())")
    with pytest.raises(MigrationError, match="999"):
        migrate(con)


def test_every_table_view_and_column_is_documented(con: duckdb.DuckDBPyConnection) -> None:
    """Every table, view and column of the warehouse carries a comment."""
    undocumented = con.execute(
        "select table_name, column_name from duckdb_columns()"
        " where schema_name = 'main' and database_name = current_database()"
        " and (comment is null or length(comment) < 5)"
    ).fetchall()
    tables = con.execute(
        "select table_name from duckdb_tables() where comment is null"
        " union all select view_name from duckdb_views() where not internal and comment is null"
    ).fetchall()
    assert undocumented == []
    assert tables == []


def test_views_are_reapplied_on_connect(tmp_path: Path) -> None:
    """A dropped view comes back on the next writable connect."""
    path = tmp_path / "w.duckdb"
    con = connect(path)
    con.execute("drop view places_latest")
    con.close()
    con = connect(path)
    assert con.execute("select count(*) from places_latest").fetchone() == (0,)
    con.close()


def test_read_only_connect_does_not_migrate(tmp_path: Path) -> None:
    """read_only opens an existing warehouse without writing; a missing one is an error."""
    path = tmp_path / "w.duckdb"
    connect(path).close()
    con = connect(path, read_only=True)
    assert con.execute("select count(*) from runs").fetchone() == (0,)
    with pytest.raises(duckdb.Error):
        con.execute("insert into schema_migrations values ('002', 'x', now())")
    con.close()
    with pytest.raises(FileNotFoundError):
        connect(tmp_path / "missing.duckdb", read_only=True)


HOLDER = textwrap.dedent("""
    import sys
    from placeflow.store.warehouse import connect
    con = connect(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()
    con.close()
""")


def test_second_writer_gets_warehouse_busy(tmp_path: Path) -> None:
    """While another process holds the database, connect raises WarehouseBusy naming the file."""
    path = tmp_path / "w.duckdb"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "ready"
            with pytest.raises(WarehouseBusy) as caught:
                connect(path)
            assert str(path) in str(caught.value)
            assert f"process {holder.pid}" in str(caught.value)
            with pytest.raises(WarehouseBusy):
                connect(path, read_only=True)
        finally:
            holder.stdin.write("\n")
            holder.stdin.flush()
            holder.wait(timeout=30)
    connect(path).close()


def test_sql_text_reads_named_files() -> None:
    """sql_text finds a file of sql/ by its name, with or without .sql, and nothing outside."""
    assert "create or replace view place_outcomes" in sql_text("views/place_outcomes")
    assert sql_text("checks/double_outcomes") == sql_text("checks/double_outcomes.sql")
    with pytest.raises(ValueError, match="inside sql"):
        sql_text("../pyproject.toml")


def insert_then_fail(con: duckdb.DuckDBPyConnection, version: str, *, nested: bool) -> None:
    with transaction(con):
        if nested:
            with transaction(con):
                con.execute("insert into schema_migrations values (?, 'x', now())", [version])
            assert warehouse.in_transaction(con)
        else:
            con.execute("insert into schema_migrations values (?, 'x', now())", [version])
        raise RuntimeError("boom")


def test_transaction_commits_or_rolls_back(con: duckdb.DuckDBPyConnection) -> None:
    """A transaction commits on success and leaves nothing behind on an exception."""
    with transaction(con):
        con.execute("insert into schema_migrations values ('900', 'kept', now())")
    with pytest.raises(RuntimeError):
        insert_then_fail(con, "901", nested=False)
    versions = [r[0] for r in con.execute("select version from schema_migrations").fetchall()]
    assert "900" in versions
    assert "901" not in versions


def test_nested_transaction_joins_the_outer_one(con: duckdb.DuckDBPyConnection) -> None:
    """An inner block joins the open transaction: the outer rollback undoes both."""
    with pytest.raises(RuntimeError):
        insert_then_fail(con, "902", nested=True)
    assert not warehouse.in_transaction(con)
    assert con.execute(
        "select count(*) from schema_migrations where version = '902'"
    ).fetchone() == (0,)


def test_insert_frame_matches_columns_by_name(con: duckdb.DuckDBPyConnection) -> None:
    """insert_frame appends by column name, fills defaults, and handles all-null columns."""
    frame = pl.DataFrame(
        {
            "disposition": ["submitted", "rejected"],
            "place_key": ["k1", None],
            "run_id": ["r", "r"],
            "row_ord": [0, 1],
            "source_file": ["a.csv", "a.csv"],
            "source_row": [1, 2],
            "source_id": [None, None],
        }
    )
    assert insert_frame(con, "run_rows", frame) == 2
    assert insert_frame(con, "run_rows", frame.clear()) == 0
    rows = con.execute(
        "select row_ord, place_key, source_id, note from run_rows order by row_ord"
    ).fetchall()
    assert rows == [(0, "k1", None, None), (1, None, None, None)]
    with pytest.raises(ValueError, match="not a table"):
        insert_frame(con, "runs; drop table runs", frame)


def test_key_hint_holds_at_most_four_characters_of_the_key(con: duckdb.DuckDBPyConnection) -> None:
    """runs.key_hint accepts 'a1b2' and '…a1b2' and refuses anything longer."""
    insert = (
        "insert into runs (run_id, created_at, status, mode, signature, key_hint)"
        " values (?, now(), 'running', 'validate', 'validate||no-summary', ?)"
    )
    con.execute(insert, ["r1", "a1b2"])
    con.execute(insert, ["r2", "…a1b2"])
    with pytest.raises(duckdb.ConstraintException):
        con.execute(insert, ["r3", "sk_live_a1b2"])


def test_a_writer_checkpoints_after_hundreds_of_megabytes_of_log(tmp_path: Path) -> None:
    """A writable connection, first or reopened, folds its log into the file only past
    CHECKPOINT_THRESHOLD (DuckDB's 16 MB default is under two chunks' outcomes), its
    checkpoints merge no row groups (each let-go after a load rewrote the load before), and it
    works on one thread."""
    wh = writer.Writer(tmp_path / "w.duckdb")
    setting = (
        "select current_setting('checkpoint_threshold'), current_setting('max_vacuum_tasks'),"
        " current_setting('threads')"
    )
    first = wh.execute(setting).fetchone()
    wh.let_go()
    again = wh.execute(setting).fetchone()
    wh.close()
    assert first == again == ("512.0 MiB", 0, 1)


def test_migration_013_keeps_the_plan_and_drops_its_indexes() -> None:
    """A warehouse of the migrations before 013 keeps its run_rows and run_places rows, and
    their constraints but the primary-key and unique indexes."""
    con = duckdb.connect(":memory:")
    con.execute(
        "create table schema_migrations (version varchar primary key, name varchar,"
        " applied_at timestamptz)"
    )
    for version, name in warehouse.migrations():
        if version < "013":
            con.execute(sql_text(f"schema/{version}_{name}"))
            con.execute("insert into schema_migrations values (?, ?, now())", [version, name])
    con.execute(
        "insert into run_rows (run_id, row_ord, source_file, source_row, place_key,"
        " disposition) values ('r1', 0, 'a.csv', 1, 'A', 'submitted')"
    )
    con.execute(
        "insert into run_places (run_id, place_key, chunk_no, position, request)"
        " values ('r1', 'A', 0, 0, '{}')"
    )
    assert "013" in migrate(con)
    assert con.execute("select run_id, row_ord, place_key from run_rows").fetchall() == [
        ("r1", 0, "A")
    ]
    assert con.execute("select place_key, chunk_no, request from run_places").fetchall() == [
        ("A", 0, "{}")
    ]
    kinds = con.execute(
        "select distinct constraint_type from duckdb_constraints()"
        " where table_name in ('run_rows', 'run_places')"
    ).fetchall()
    assert {k for (k,) in kinds} == {"CHECK", "NOT NULL"}
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "insert into run_rows (run_id, row_ord, source_file, source_row, place_key,"
            " disposition) values ('r1', 1, 'a.csv', 2, null, 'submitted')"
        )
    con.close()


def test_a_held_connection_is_not_let_go_while_the_client_waits(tmp_path: Path) -> None:
    """`let_go` and `waiting` (what a run calls when the client waits) keep a held connection,
    and its temporary tables (a run's staging) with it; once no longer held, it lets go."""
    wh = writer.Writer(tmp_path / "w.duckdb")
    with wh.held():
        wh.execute("create temp table staged as select 1 as x")
        wh.let_go()
        wh.waiting(60.0)
        assert wh.execute("select count(*) from staged").fetchall() == [(1,)]
        assert wh.opened == 1
    wh.let_go()
    assert wh.execute("select count(*) from duckdb_tables() where temporary").fetchall() == [(0,)]
    assert wh.opened == 2
    wh.close()


def test_a_writer_caps_duckdb_memory_and_a_block_with_its_own_settings_gives_it_back(
    tmp_path: Path,
) -> None:
    """A writable connection caps DuckDB's memory (its block cache included) at
    WAREHOUSE_SETTINGS["memory_limit"] instead of DuckDB's 80% of RAM; a block with settings
    of its own restores that cap after, not DuckDB's default; a read-only connection (a
    report's) keeps to the same cap."""
    con = warehouse.connect(tmp_path / "w.duckdb")

    def limit() -> str:
        return str(con.execute("select current_setting('memory_limit')").fetchall()[0][0])

    capped = limit()
    assert capped.startswith("488") and "MiB" in capped  # 512 MB as DuckDB shows it
    with warehouse.settings(con, memory_limit="256MB"):
        assert limit() != capped
    assert limit() == capped
    con.close()
    reader = warehouse.connect(tmp_path / "w.duckdb", read_only=True)  # a report's connection
    assert reader.execute("select current_setting('memory_limit')").fetchall()[0][0] == capped
    reader.close()


def test_a_wait_lets_go_of_the_warehouse_and_counts_that_time_as_waited(tmp_path: Path) -> None:
    """A client built with the writer's `waiting` lets go of the run's connection before it
    pauses (other processes may read), and the time letting go took (a checkpoint) comes off
    the pause: a poll planned for when a job ends is not made late by it. The clock is the
    client's own (here a fake one)."""
    now = [100.0]
    slept: list[float] = []

    class Closing(writer.Writer):
        def let_go(self) -> None:
            super().let_go()
            now[0] += 0.4  # what closing the connection took

    with Closing(tmp_path / "w.duckdb") as wh:
        api = PlaceApiClient(
            base_url="http://127.0.0.1:9", api_key="k", limits=RateLimits(),
            clock=lambda: now[0], sleep=slept.append, waiting=wh.waiting,
        )  # fmt: skip
        wh.execute("create table t as select 1 as x")
        api.pause(2.0)
        assert wh.opened == 1 and not wh.holding()  # let go during the wait
        assert wh.execute("select x from t").fetchall() == [(1,)]
        api.pause(0.3)
        assert slept == [pytest.approx(1.6), 0.0]  # never a negative wait
        assert wh.opened == 2
        api.close()
