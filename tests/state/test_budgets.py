"""Budgets kept in the warehouse (`placeflow.state.budgets`): their periods, how `set` replaces and
`clear` removes, and what a budget counts as spent, read from a real warehouse's ledger."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import duckdb
import pytest

from placeflow.errors import OptionsError
from placeflow.state import budgets
from placeflow.store.warehouse import connect
from tests.warehouse.helpers import add_run

NOW = datetime(2026, 11, 28, 7, 30, tzinfo=UTC)  # a Saturday


@pytest.fixture
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(tmp_path_factory.mktemp("budgets") / "wh.duckdb")
    yield con
    con.close()


def ledger(con: duckdb.DuckDBPyConnection, run_id: str, kind: str, credits: int, at: datetime,
           chunk_no: int = 0) -> None:  # fmt: skip
    con.execute(
        "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at)"
        " values (?, ?, 'ref', ?, ?, ?)",
        [run_id, chunk_no, kind, credits, at],
    )


def test_periods_are_the_utc_day_the_week_from_monday_and_the_month_to_the_reset() -> None:
    """A day is the UTC day, a week starts on Monday, a month ends at the service's next reset
    when it lies ahead, from it when it lies behind by less than a month, and is the calendar
    month otherwise."""
    day = budgets.period_of("day", NOW)
    assert day == (datetime(2026, 11, 28, tzinfo=UTC), datetime(2026, 11, 29, tzinfo=UTC))
    week = budgets.period_of("week", NOW)
    assert week == (datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
    assert budgets.period_of("month", NOW) == (
        datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    )  # fmt: skip
    assert budgets.period_of("month", NOW, date(2026, 12, 15)) == (
        datetime(2026, 11, 15, tzinfo=UTC), datetime(2026, 12, 15, tzinfo=UTC)
    )  # fmt: skip
    last = budgets.period_of("month", NOW, date(2026, 11, 15))  # a reset behind: the last one
    assert last == (datetime(2026, 11, 15, tzinfo=UTC), datetime(2026, 12, 15, tzinfo=UTC))
    stale = budgets.period_of("month", NOW, date(2026, 9, 15))  # a month or more behind
    assert stale == (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
    assert budgets.reset_date_of("2026-12-15", "monthly") == date(2026, 12, 15)
    assert budgets.reset_date_of("2026-12-15", "weekly") is None


def test_set_replaces_the_budget_of_the_same_period_and_kind_and_clear_removes(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """`set` keeps one budget per (per, for); `clear` takes the same flags, all without them;
    the table refuses what it does not know."""
    budgets.set_budget(con, credits=100, per="month", now=NOW)
    budgets.set_budget(con, credits=1000, per="month", now=NOW)
    budgets.set_budget(con, credits=50, per="week", applies_to="refresh", now=NOW)
    found = budgets.budgets(con)
    assert [(b.per, b.applies_to, b.credits) for b in found] == [
        ("week", "refresh", 50), ("month", None, 1000)
    ]  # fmt: skip
    with pytest.raises(OptionsError):
        budgets.set_budget(con, credits=1, per="year", now=NOW)
    with pytest.raises(duckdb.ConstraintException):
        con.execute("insert into budgets values ('day', 'export', 1, 0.8, now())")
    assert budgets.clear_budgets(con, per="week") == 1
    assert budgets.clear_budgets(con) == 1
    assert budgets.budgets(con) == []


def test_spent_is_charged_in_the_period_plus_what_is_held_by_kind(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """A budget counts the charges of its period, unsettled holds and the rest of the estimate
    of a live run still spending, of the kinds it governs; left = credits - spent."""
    budgets.set_budget(con, credits=1000, per="month", now=NOW)
    budgets.set_budget(con, credits=300, per="month", applies_to="refresh", now=NOW)
    add_run(con, "run_done", status="completed", credits_estimated=400, inputs='["a.csv"]')
    ledger(con, "run_done", "hold", 400, NOW - timedelta(days=1))
    ledger(con, "run_done", "charge", 350, NOW - timedelta(days=1))
    ledger(con, "run_done", "release", 50, NOW - timedelta(days=1))
    add_run(con, "run_old", status="completed", credits_estimated=99, inputs='["a.csv"]')
    ledger(con, "run_old", "charge", 99, NOW - timedelta(days=40))  # last month: not counted
    add_run(
        con, "run_refresh", status="running", credits_estimated=200, inputs='["warehouse:/w"]',
        owner_host=socket.gethostname(), owner_pid=os.getppid(), heartbeat_at=NOW,
    )  # fmt: skip
    ledger(con, "run_refresh", "hold", 120, NOW)  # a job held, not settled; 80 still to send
    every, refresh = budgets.standings(con, NOW)
    assert (every.charged, every.held, every.left) == (350, 200, 450)
    assert (refresh.budget.applies_to, refresh.spent, refresh.left) == ("refresh", 200, 100)
    assert budgets.standings(con, NOW, kind="run")[0].budget.applies_to is None
    said = budgets.refusal(budgets.standings(con, NOW, kind="refresh"), 150, "this refresh")
    assert said is not None and "month budget (300 credits, for refresh)" in said
    assert budgets.refusal(budgets.standings(con, NOW, kind="run"), 450) is None
    assert budgets.warnings(budgets.standings(con, NOW, kind="refresh")) == []  # 67%
    ledger(con, "run_refresh", "charge", 60, NOW, chunk_no=1)  # within its reservation
    assert budgets.standings(con, NOW, kind="refresh")[1].spent == 200
    add_run(con, "run_r2", status="completed", credits_estimated=60, inputs='["warehouse:/w"]')
    ledger(con, "run_r2", "charge", 60, NOW)  # 260 of 300: past 80%
    (warned,) = budgets.warnings(budgets.standings(con, NOW, kind="refresh"))
    assert "87% spent" in warned
