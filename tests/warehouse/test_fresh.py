"""The fresh stage: places whose newest successful outcome of the same signature is young are
skipped (under their key or an earlier key of their core), those that keep failing held."""

from __future__ import annotations

from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from placeflow.options import RunOptions
from placeflow.pipeline.fresh import FreshInfo, fresh_keys, mark_fresh, mark_fresh_staged
from placeflow.pipeline.staging import Staging
from placeflow.state.records import DEDUPED, MARKED
from placeflow.store.warehouse import connect
from tests.warehouse.dataset import load
from tests.warehouse.helpers import (
    SIGNATURES,
    T0,
    add_run,
    plan_chunk,
    validate_line,
    write_lines,
)

DAY = timedelta(days=1)
VALIDATE = SIGNATURES["validate"]


@pytest.fixture
def history(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """At T0 run a validates A, B (failed), C, D; a day later run b has C failed, D again."""
    add_run(con, "a", "validate")
    plan_chunk(con, "a", 0, ["A", "B", "C", "D"], kind="validate")
    lines = [
        validate_line("A"),
        validate_line("B", success=False),
        validate_line("C"),
        validate_line("D"),
    ]
    load(con, "a", 0, "validate", write_lines(tmp_path / "a.gz", lines), "job", 4, now=T0)
    add_run(con, "b", "validate")
    plan_chunk(con, "b", 0, ["C", "D"], kind="validate")
    lines = [validate_line("C", success=False), validate_line("D")]
    load(con, "b", 0, "validate", write_lines(tmp_path / "b.gz", lines), "job", 2, now=T0 + DAY)
    return con


def fresh(
    con: duckdb.DuckDBPyConnection,
    keys: list[str],
    *,
    now: datetime,
    max_age: timedelta = 7 * DAY,
    signature: str = VALIDATE,
) -> list[tuple[str, str]]:
    frame = fresh_keys(
        con,
        pl.DataFrame({"place_key": keys}, schema={"place_key": pl.String}),
        signature=signature,
        max_age=max_age,
        now=now,
    )
    assert frame.columns == ["place_key", "run_id", "outcome_at"]
    return list(zip(frame["place_key"], frame["run_id"], strict=True))


def test_newest_successful_outcome_counts(history: duckdb.DuckDBPyConnection) -> None:
    """A failure never makes a place fresh; the newest success (not the newest outcome) does."""
    assert fresh(history, ["A", "B", "C", "D"], now=T0 + 2 * DAY) == [
        ("A", "a"),
        ("C", "a"),
        ("D", "b"),
    ]


def test_max_age_boundary(history: duckdb.DuckDBPyConnection) -> None:
    """An outcome exactly max_age old is stale; a microsecond younger is fresh."""
    at_boundary = T0 + 7 * DAY
    assert fresh(history, ["A"], now=at_boundary) == []
    assert fresh(history, ["A"], now=at_boundary - timedelta(microseconds=1)) == [("A", "a")]


def test_only_the_same_signature_is_fresh(history: duckdb.DuckDBPyConnection) -> None:
    """Validations do not make a place fresh for an enrich run."""
    assert fresh(history, ["A", "D"], now=T0 + DAY, signature=SIGNATURES["enrich"]) == []


def test_answer_follows_the_keys_order_once_per_key(history: duckdb.DuckDBPyConnection) -> None:
    """The answer keeps the frame's order, lists a repeated key once, and skips unknown keys."""
    assert fresh(history, ["D", "X", "A", "D", "A"], now=T0 + DAY) == [("D", "b"), ("A", "a")]


def test_empty_frame_and_empty_warehouse(con: duckdb.DuckDBPyConnection) -> None:
    """No keys, or no outcomes, is an empty answer with the three columns."""
    assert fresh(con, [], now=T0) == []
    assert fresh(con, ["A"], now=T0) == []


def test_naive_now_is_refused(con: duckdb.DuckDBPyConnection) -> None:
    """`now` without a timezone is a caller's bug, not a guess."""
    with pytest.raises(ValueError, match="timezone"):
        fresh(con, ["A"], now=datetime(2026, 1, 1))


# --- the fresh stage: mark_fresh (a frame) and mark_fresh_staged (the staging tables) ---------

VALIDATE_RUN = RunOptions(mode="validate")


def earlier_runs(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """Runs r1..r3 (validate): A fresh; B failed once; E failed three times in a row; P1 (core
    k1, no region) fresh; P2 (core k2) failed once; the outcomes loaded at T0, T0+1d, T0+2d."""
    history = {
        "r1": [("A", True), ("B", False), ("E", False), ("P1", True), ("P2", False)],
        "r2": [("E", False)],
        "r3": [("E", False)],
    }
    for day, (run_id, outcomes) in enumerate(history.items()):
        add_run(con, run_id, "validate", created_at=T0 + day * DAY)
        plan_chunk(con, run_id, 0, [k for k, _ in outcomes], kind="validate")
        lines = [validate_line(k, success=ok) for k, ok in outcomes]
        path = write_lines(tmp_path / f"{run_id}.gz", lines)
        load(con, run_id, 0, "validate", path, "job", len(lines), now=T0 + day * DAY)
    con.execute(
        "update run_places set core_key = 'k' || substr(place_key, 2)"
        " where place_key in ('P1', 'P2')"
    )


def deduped_rows() -> pl.DataFrame:
    """Today's input as dedupe leaves it: a.csv sends A (and repeats it), B, E and N (new);
    b.csv sends Q (core k1, a region now) and its duplicate, and R (core k2)."""
    rows = [  # place_key, core_key, region, source_file, disposition, note
        ("A", "ka", None, "a.csv", "submitted", None),
        ("A", "ka", None, "a.csv", "duplicate", "duplicate of row 1 of a.csv"),
        ("B", "kb", None, "a.csv", "submitted", "phone dropped"),
        ("E", "ke", None, "a.csv", "submitted", None),
        ("N", "kn", None, "a.csv", "submitted", None),
        ("Q", "k1", "CA", "b.csv", "submitted", None),
        ("Q", "k1", "CA", "b.csv", "duplicate", "duplicate of row 1 of b.csv"),
        ("R", "k2", "CA", "b.csv", "submitted", None),
    ]
    names = ["place_key", "core_key", "region", "source_file", "disposition", "note"]
    frame = pl.DataFrame(rows, schema=names, orient="row")
    return frame.with_row_index("row_ord").with_columns(
        pl.lit(None, pl.String).alias("postcode"), pl.int_range(pl.len()).alias("source_row")
    )


def marks(frame: pl.DataFrame) -> list[tuple[str, str, str, str | None]]:
    return list(frame.select("place_key", "disposition", "outcome_key", "note").iter_rows())


CORE_NOTE = "fresh outcome of P1 (the same place before its region or postcode was filled)"
HELD_NOTE = "failed 3 times in a row (last: upstream lookup failed); --retry-failed sends it again"
REKEY_WARNING = (
    "b.csv: 2 of 2 places were run before under other keys (region or postcode newly filled or"
    " mapped differently, or spelled otherwise?); 1 use their earlier fresh outcomes, 1 are sent"
    " again"
)


@pytest.fixture
def earlier(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    earlier_runs(con, tmp_path)
    return con


def test_marks_fresh_core_fresh_and_failing_places(earlier: duckdb.DuckDBPyConnection) -> None:
    """A place fresh under its key or its core's earlier key is skipped (its duplicate answered
    by the same outcome), one that failed three times in a row is held, the rest are sent; the
    notes say why, and a file mostly re-keyed is warned of."""
    marked, info = mark_fresh(earlier, deduped_rows(), VALIDATE_RUN, now=T0 + 3 * DAY)
    assert marks(marked) == [
        ("A", "skipped_fresh", "A", None),
        ("A", "duplicate", "A", "duplicate of row 1 of a.csv"),
        ("B", "submitted", "B", "phone dropped"),
        ("E", "held_failing", "E", HELD_NOTE),
        ("N", "submitted", "N", None),
        ("Q", "skipped_fresh", "P1", CORE_NOTE),
        ("Q", "duplicate", "P1", "duplicate of row 1 of b.csv"),
        ("R", "submitted", "R", None),
    ]
    assert marked.columns == [*deduped_rows().columns, "claimed_by", "outcome_key"]
    assert info == FreshInfo(
        candidates=6, fresh=2, fresh_by_core=1, held_failing=1, warnings=(REKEY_WARNING,)
    )
    leftovers = earlier.execute("select count(*) from duckdb_tables() where temporary").fetchall()
    assert leftovers == [(0,)]


def test_force_retry_failed_and_age(earlier: duckdb.DuckDBPyConnection) -> None:
    """--force sends fresh places again (failing ones stay held), --retry-failed sends the
    failing ones, and outcomes older than the maximum age are not fresh."""
    forced, info = mark_fresh(
        earlier, deduped_rows(), VALIDATE_RUN.model_copy(update={"force": True}), now=T0 + 3 * DAY
    )
    assert forced["disposition"].to_list().count("skipped_fresh") == 0
    assert forced["outcome_key"].to_list() == forced["place_key"].to_list()
    assert (info.fresh, info.held_failing, info.warnings) == (0, 1, ())
    retried, info = mark_fresh(
        earlier,
        deduped_rows(),
        VALIDATE_RUN.model_copy(update={"retry_failed": True}),
        now=T0 + 3 * DAY,
    )
    assert "held_failing" not in retried["disposition"].to_list()
    assert (info.fresh, info.held_failing) == (2, 0)
    _, info = mark_fresh(earlier, deduped_rows(), VALIDATE_RUN, now=T0 + 40 * DAY)
    assert (info.fresh, info.held_failing) == (0, 1)


def test_without_warehouse_or_runs_nothing_is_fresh(con: duckdb.DuckDBPyConnection) -> None:
    """No warehouse, or one with no run yet (DuckDB 2.0 cannot bind the freshness query
    then): every place is sent, answered by its own key, its note kept."""
    for where in (None, con):
        marked, info = mark_fresh(where, deduped_rows(), VALIDATE_RUN, now=T0)
        assert marked.drop("outcome_key", "claimed_by").equals(deduped_rows())
        assert marked["outcome_key"].to_list() == marked["place_key"].to_list()
        assert info == FreshInfo(candidates=6, fresh=0)


def test_staged_path_gives_the_frame_paths_marks(earlier: duckdb.DuckDBPyConnection) -> None:
    """mark_fresh_staged on the warehouse's staging tables leaves in MARKED what mark_fresh
    returns for the same rows, drops DEDUPED, and says the same."""
    expected, expected_info = mark_fresh(earlier, deduped_rows(), VALIDATE_RUN, now=T0 + 3 * DAY)
    staging = Staging(earlier, warehouse=True)
    staging.append(DEDUPED, deduped_rows())
    info = mark_fresh_staged(staging, VALIDATE_RUN, now=T0 + 3 * DAY)
    assert staging.frame(MARKED).equals(expected)
    assert info == expected_info
    assert not staging.exists(DEDUPED)
    staging.close()


def test_read_only_warehouse(tmp_path: Path) -> None:
    """A preview opens the warehouse read-only: the stage's temporary tables live there all
    the same, its marks are those of a writable warehouse, and the file gains no table."""
    db = tmp_path / "wh.duckdb"
    with closing(connect(db)) as writable:
        earlier_runs(writable, tmp_path)
        expected = mark_fresh(writable, deduped_rows(), VALIDATE_RUN, now=T0 + 3 * DAY)
        tables = writable.execute("select count(*) from duckdb_tables()").fetchall()
    with closing(connect(db, read_only=True)) as read_only:
        marked, info = mark_fresh(read_only, deduped_rows(), VALIDATE_RUN, now=T0 + 3 * DAY)
        assert (marked.equals(expected[0]), info) == (True, expected[1])
        assert read_only.execute("select count(*) from duckdb_tables()").fetchall() == tables


def test_warehouse_from_before_core_keys(tmp_path: Path) -> None:
    """A warehouse whose run_places has no core_key yet (a read-only preview cannot migrate
    it): places are found fresh under their own keys alone, and nothing is re-keyed."""
    db = tmp_path / "old.duckdb"
    with closing(connect(db)) as writable:
        earlier_runs(writable, tmp_path)
        writable.execute("alter table run_places drop column core_key")
    with closing(connect(db, read_only=True)) as read_only:
        marked, info = mark_fresh(read_only, deduped_rows(), VALIDATE_RUN, now=T0 + 3 * DAY)
    assert marked.filter(pl.col("place_key") == "Q")["disposition"].to_list() == [
        "submitted",
        "duplicate",
    ]
    assert info == FreshInfo(candidates=6, fresh=1, held_failing=1)
