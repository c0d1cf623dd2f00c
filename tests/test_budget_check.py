"""The one budget check before spending (`placeflow.runner.budget.check`): the key's balance is
asked for what a run may yet hold, the warehouse's budgets for all it may yet spend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import duckdb
import pytest

from placeflow.api.models import UsageResponse
from placeflow.options import RunOptions
from placeflow.pipeline.plan import estimate
from placeflow.runner.budget import check
from placeflow.state.budgets import set_budget
from placeflow.store.warehouse import connect

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


@pytest.fixture
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(tmp_path_factory.mktemp("check") / "wh.duckdb")
    set_budget(con, credits=100, per="month", now=NOW)
    yield con
    con.close()


def usage(available: int) -> UsageResponse:
    return UsageResponse(
        tier="paid", api_key_id="k", customer_id="c", customer_name="n", quota_limit=1000,
        current_usage=1000 - available, remaining=available, available=available,
        percentage_used=0.0, reset_date="2026-12-15", period="monthly", status="active",
    )  # fmt: skip


def test_a_resume_whose_jobs_are_held_is_not_refused_for_the_balance_they_hold(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """A resume with nothing left to send and 50 credits of jobs held at the service passes a
    key with 0 available (its holds are already taken) and a budget of 100; 150 would pass
    the budget and is refused, naming it; a new run of 20 places meets the balance."""
    options = RunOptions()
    nothing = estimate(0, options, None)
    ok = check(con, nothing, options, kind="run", now=NOW, usage=usage(0), rest=50)
    assert ok is None
    said = check(con, nothing, options, kind="run", now=NOW, usage=usage(0), rest=150)
    assert said is not None and "month budget (100 credits) has 100 left until 2026-12-15" in said
    fresh = check(con, estimate(20, options, None), options, kind="run", now=NOW, usage=usage(5))
    assert fresh is not None and "5 available" in fresh


def test_the_threshold_event_is_sent_by_the_run_that_crosses_it_alone(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Of a 100-credit budget warning at 80%, the run whose 30 credits take it from 60 to 90
    announces the threshold; a later run of 5 more still gets the warning line, but sends no
    second event: an automation fires once a period."""
    from placeflow.events import BudgetThreshold, Event
    from placeflow.runner.budget import warn

    def charge(run_id: str, credits: int) -> None:
        con.execute(
            "insert into runs (run_id, created_at, status, mode, signature, inputs)"
            " values (?, ?, 'completed', 'enrich', 'enrich||false', '[]')",
            [run_id, NOW],
        )
        con.execute(
            "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at)"
            " values (?, 0, 'b', 'charge', ?, ?)",
            [run_id, credits, NOW],
        )

    def told(run_id: str) -> tuple[list[str], list[Event]]:
        sent: list[Event] = []
        lines = warn(lambda: con, kind="run", now=NOW, api=None, emit=sent.append, run_id=run_id)
        return lines, sent

    charge("r1", 60)
    assert told("r1") == ([], [])
    charge("r2", 30)
    lines, sent = told("r2")
    assert len(lines) == 1 and "90% spent" in lines[0]
    assert [type(e) for e in sent] == [BudgetThreshold] and sent[0].run_id == "r2"  # type: ignore[attr-defined]  # an Event union
    charge("r3", 5)
    lines, sent = told("r3")
    assert len(lines) == 1 and "95% spent" in lines[0] and sent == []
