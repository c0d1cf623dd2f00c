"""A run's budget check, written once for every spending command (run, resume, refresh and
research, and their deployments): before anything is sent, and again at its end.

Before: the caller's own cap (`--max-credits`), the key's balance (GET /v1/usage `available`:
other machines may use the key) and the warehouse's budgets (`placeflow.state.budgets`) that
apply to the run's kind. It runs while the warehouse is held and the run is recorded with its
estimate in the same hold (`placeflow.runner.orchestrate`), so the estimate is reserved before
another process can check the same budgets. After: a budget spent past its warning share is
said (stderr, the summary) and announced as a `BudgetThreshold` event.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import TransientError, UsageUnknown
from placeflow.api.models import UsageResponse
from placeflow.events import BudgetThreshold, Emit
from placeflow.options import RunOptions
from placeflow.pipeline.plan import Estimate, refusal
from placeflow.state import budgets
from placeflow.state.budgets import Standing


def check(
    con: duckdb.DuckDBPyConnection,
    cost: Estimate,
    options: RunOptions,
    *,
    kind: str,
    now: datetime,
    usage: UsageResponse | None,
    exclude_run: str | None = None,
    rest: int | None = None,
) -> str | None:
    """Why the run must not start (None: it may): the caller's cap and the key's balance
    against `cost` (what it may yet hold), then the first warehouse budget of `kind` that
    `rest` (what it may yet spend: a resume's jobs already held at the service too; `cost`'s
    credits when None) passes, one line naming it."""
    available = None if usage is None else usage.spendable
    refused = refusal(cost, options, available=available)
    spend = cost.credits if rest is None else rest
    if refused is not None or not spend:
        return refused
    return within_budgets(con, spend, kind=kind, now=now, usage=usage, exclude_run=exclude_run)


def within_budgets(
    con: duckdb.DuckDBPyConnection,
    credits: int,
    *,
    kind: str,
    now: datetime,
    usage: UsageResponse | None,
    exclude_run: str | None = None,
) -> str | None:
    """The line naming the first budget of `kind` that `credits` more would pass (None: none);
    a research checks its own cap and the key's balance first, as `check` does for a run."""
    found = budgets.standings(
        con, now, kind=kind, reset_date=reset_of(usage), exclude_run=exclude_run
    )
    return budgets.refusal(found, credits, f"this {kind}")


def reset_of(usage: UsageResponse | None) -> date | None:
    """The service's next monthly reset (a month budget's end), when its usage says it."""
    return None if usage is None else budgets.reset_date_of(usage.reset_date, usage.period)


def room(
    con: duckdb.DuckDBPyConnection, *, kind: str, now: datetime, usage: UsageResponse | None
) -> tuple[int | None, str | None]:
    """What is left to spend under the budgets of `kind` (None: no budget applies) and the
    budget that leaves the least, named."""
    found = budgets.standings(con, now, kind=kind, reset_date=reset_of(usage))
    if not found:
        return None, None
    least = min(found, key=lambda s: s.left)
    return max(least.left, 0), least.budget.name()


def warn(
    db: Callable[[], duckdb.DuckDBPyConnection],
    *,
    kind: str,
    now: datetime,
    api: PlaceApiClient | None,
    emit: Emit,
    run_id: str,
) -> list[str]:
    """At a run's end: each budget of `kind` spent past its warning share, said (the lines, for
    stderr and the summary, after every run past it) and announced as `BudgetThreshold` by the
    run that crossed it alone (the budget stood below its share without this run's spending),
    so an automation fires once a period, not once a run. `db` gives the connection at each
    use: a run's writer lets it go while the client waits (the usage asked here)."""
    if not budgets.budgets(db()):
        return []
    usage = None
    if api is not None:
        try:
            usage = api.usage()
        except (UsageUnknown, TransientError):  # the calendar month, then
            usage = None
    reset = reset_of(usage)
    found = budgets.standings(db(), now, kind=kind, reset_date=reset)
    before = budgets.standings(db(), now, kind=kind, reset_date=reset, exclude_run=run_id)
    lines = budgets.warnings(found)
    below = {_key(s) for s in before if s.share() < s.budget.warn_at}
    for s, line in zip(_past(found), lines, strict=True):
        if _key(s) in below:  # this run crossed it
            emit(threshold_event(s, run_id, line))
    return lines


def _key(s: Standing) -> tuple[str, str | None]:
    return s.budget.per, s.budget.applies_to


def _past(found: list[Standing]) -> list[Standing]:
    return [s for s in found if s.budget.credits and s.share() >= s.budget.warn_at]


def threshold_event(s: Standing, run_id: str, message: str) -> BudgetThreshold:
    b = s.budget
    return BudgetThreshold(
        run_id=run_id, per=b.per, applies_to=b.applies_to, credits=b.credits, spent=s.spent,
        left=s.left, warn_at=b.warn_at, period_end=s.period_end.isoformat(), message=message,
    )  # fmt: skip
