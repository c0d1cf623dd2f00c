"""fresh_keys: the places whose newest successful outcome of the same signature is young."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from placeflow.pipeline.fresh import fresh_keys
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
    lines = [validate_line("A"), validate_line("B", success=False), validate_line("C"),
             validate_line("D")]
    load(con, "a", 0, "validate", write_lines(tmp_path / "a.gz", lines), "job", 4, now=T0)
    add_run(con, "b", "validate")
    plan_chunk(con, "b", 0, ["C", "D"], kind="validate")
    lines = [validate_line("C", success=False), validate_line("D")]
    load(con, "b", 0, "validate", write_lines(tmp_path / "b.gz", lines), "job", 2,
         now=T0 + DAY)
    return con


def fresh(con: duckdb.DuckDBPyConnection, keys: list[str], *, now: datetime,
          max_age: timedelta = 7 * DAY, signature: str = VALIDATE) -> list[tuple[str, str]]:
    frame = fresh_keys(con, pl.DataFrame({"place_key": keys}, schema={"place_key": pl.String}),
                       signature=signature, max_age=max_age, now=now)
    assert frame.columns == ["place_key", "run_id", "outcome_at"]
    return list(zip(frame["place_key"], frame["run_id"], strict=True))


def test_newest_successful_outcome_counts(history: duckdb.DuckDBPyConnection) -> None:
    """A failure never makes a place fresh; the newest success (not the newest outcome) does."""
    assert fresh(history, ["A", "B", "C", "D"], now=T0 + 2 * DAY) == [
        ("A", "a"), ("C", "a"), ("D", "b")]


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
