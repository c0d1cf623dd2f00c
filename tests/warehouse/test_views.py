"""place_outcomes, places_latest and run_credits on a small hand-built history."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from tests.warehouse.dataset import add_rows, load
from tests.warehouse.helpers import (
    SIGNATURES,
    T0,
    add_run,
    attribute,
    enrich_line,
    operational,
    plan_chunk,
    validate_line,
    write_lines,
)

HOUR = timedelta(hours=1)


@pytest.fixture
def history(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """v1 validates A and B at T0; e1 enriches A (found) and C (failed) at T0+1h; v2
    validates B again at T0+2h, now open."""
    add_run(con, "v1", "validate", status="completed")
    add_rows(con, "v1", [("A", "submitted"), ("B", "submitted")])
    plan_chunk(con, "v1", 0, ["A", "B"], kind="validate")
    lines = [
        validate_line("A"),
        validate_line("B", operational_status=operational("closed", 0.9, "permanent")),
    ]
    load(con, "v1", 0, "validate", write_lines(tmp_path / "v1.gz", lines), "job", 2)

    add_run(
        con,
        "e1",
        "enrich",
        status="completed",
        credits_estimated=2,
        usage_before=50,
        usage_after=51,
    )
    add_rows(con, "e1", [("A", "submitted"), ("C", "submitted")])
    plan_chunk(con, "e1", 0, ["A", "C"])
    lines = [
        enrich_line("A", attributes={"phone": attribute({"number": "+1555"})}),
        enrich_line("C", success=False),
    ]
    load(con, "e1", 0, "enrich", write_lines(tmp_path / "e1.gz", lines), "job", 2, now=T0 + HOUR)

    add_run(con, "v2", "validate", status="completed")
    add_rows(con, "v2", [("B", "submitted")])
    plan_chunk(con, "v2", 0, ["B"], kind="validate", route="sync")
    load(
        con,
        "v2",
        0,
        "validate",
        write_lines(tmp_path / "v2.gz", [validate_line("B")]),
        "sync",
        0,
        now=T0 + 2 * HOUR,
    )
    return con


def test_place_outcomes_unions_both_kinds_with_signatures(
    history: duckdb.DuckDBPyConnection,
) -> None:
    """Every outcome appears once, with its mode, its run's signature and its load time."""
    rows = history.execute(
        "select run_id, place_key, mode, signature, success, operational_status, outcome_at"
        " from place_outcomes order by outcome_at, place_key"
    ).fetchall()
    assert rows == [
        ("v1", "A", "validate", SIGNATURES["validate"], True, "open", T0),
        ("v1", "B", "validate", SIGNATURES["validate"], True, "closed", T0),
        ("e1", "A", "enrich", SIGNATURES["enrich"], True, "open", T0 + HOUR),
        ("e1", "C", "enrich", SIGNATURES["enrich"], False, None, T0 + HOUR),
        ("v2", "B", "validate", SIGNATURES["validate"], True, "open", T0 + 2 * HOUR),
    ]


def test_places_latest_keeps_the_newest_outcome_per_place(
    history: duckdb.DuckDBPyConnection,
) -> None:
    """One row per place: its newest outcome, enrichment columns null for a validation."""
    rows = history.execute(
        "select place_key, run_id, mode, success, operational_status, phone_number,"
        " phone_confidence, attributes_requested from places_latest order by place_key"
    ).fetchall()
    assert rows == [
        (
            "A",
            "e1",
            "enrich",
            True,
            "open",
            "+1555",
            "high",
            "opening_hours,phone,website,existence,open_closed",
        ),
        ("B", "v2", "validate", True, "open", None, None, None),
        (
            "C",
            "e1",
            "enrich",
            False,
            None,
            None,
            None,
            "opening_hours,phone,website,existence,open_closed",
        ),
    ]


def test_run_credits_sums_the_ledger_against_usage(history: duckdb.DuckDBPyConnection) -> None:
    """Per run: estimate, held, charged, released, usage delta and what the ledger leaves over."""
    rows = history.execute(
        "select run_id, estimated, held, charged, released, usage_delta, ledger_vs_usage"
        " from run_credits order by run_id"
    ).fetchall()
    assert rows == [
        ("e1", 2, 2, 1, 1, 1, 0),
        ("v1", None, 2, 2, 0, None, None),
        ("v2", None, 0, 1, 0, None, None),
    ]
