"""Credit budgets kept in the warehouse (`budgets`, migration 020): so many credits a day, a week
or a month, for every spending command or for one kind of them, and what each has spent.

    placeflow budget set --credits 1000 --per month [--for run|refresh|research]

A budget's period is the UTC day, the week from Monday (UTC), or the month: the service's month
when GET /v1/usage gives a monthly `reset_date` (up to it when it lies ahead, from it when it lies
behind: the spec does not say whether it is the next reset or the last), else the calendar month
(UTC). What it has
spent is read from the ledger and the runs still spending (sql/queries/budget_spent.sql):

    spent = charged (charges and adjustments recorded in the period)
          + held    (holds not yet settled, possible charges, and the rest of the estimate of
                     every run still spending whose process is alive)
    left  = credits - spent

A command counts against the budgets for all and those whose `applies_to` names its kind (a
resume as the run it resumes, `research --from-warehouse` as research). The check before
spending (`refusal`) runs in the same hold of the warehouse that records the run with its
estimate (its reservation) and its claims, so two processes cannot pass a budget together.
The table is guarded like the others: its CHECKs refuse a period, a kind or a share it does not
know, and every write to it is a function here.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

import duckdb

from placeflow.errors import OptionsError
from placeflow.state.owners import owner_of
from placeflow.store.dbfile import has_table
from placeflow.store.warehouse import sql_text, transaction

Per = Literal["day", "week", "month"]
Kind = Literal["run", "refresh", "research"]
PERS: tuple[Per, ...] = ("day", "week", "month")
KINDS: tuple[Kind, ...] = ("run", "refresh", "research")
WARN_AT = 0.8
"""The share of a budget past which a run warns (stderr, its summary, an event)."""
ALL = "all"
"""`budgets.applies_to` of a budget for every spending command (`--for` not given)."""


@dataclass(frozen=True)
class Budget:
    """One row of `budgets`: `applies_to` None for every spending command."""

    credits: int
    per: Per
    applies_to: Kind | None
    warn_at: float = WARN_AT
    set_at: datetime | None = None

    def name(self) -> str:
        """How a message names it: `the month budget (1,000 credits, for refresh)`."""
        scope = f", for {self.applies_to}" if self.applies_to else ""
        return f"the {self.per} budget ({self.credits:,} credits{scope})"

    def governs(self, kind: str) -> bool:
        return self.applies_to is None or self.applies_to == kind


@dataclass(frozen=True)
class Standing:
    """A budget in its current period: what was spent (charged + held) and what is left."""

    budget: Budget
    period_start: datetime
    period_end: datetime
    charged: int
    held: int

    @property
    def spent(self) -> int:
        return self.charged + self.held

    @property
    def left(self) -> int:
        return self.budget.credits - self.spent

    def share(self, extra: int = 0) -> float:
        """The share of the budget spent (with `extra` more), 1.0 for a budget of 0."""
        credits = self.budget.credits
        return (self.spent + extra) / credits if credits else 1.0

    def as_dict(self) -> dict[str, Any]:
        """The document `placeflow budget --json` prints per budget."""
        return {
            "credits": self.budget.credits,
            "per": self.budget.per,
            "for": self.budget.applies_to,
            "period_start": self.period_start.isoformat(),
            "period_end": self.period_end.isoformat(),
            "spent": self.spent,
            "held": self.held,
            "left": self.left,
        }

    def said(self) -> str:
        """One line: the budget, its period, spent and left."""
        b = self.budget
        return (
            f"{b.name()}: {self.spent:,} spent ({self.held:,} of it held) from"
            f" {self.period_start:%Y-%m-%d} to {self.period_end:%Y-%m-%d}, {self.left:,} left"
        )


# --- the table ----------------------------------------------------------------------------------


def _checked(credits: int, per: str, applies_to: str | None, warn_at: float) -> None:
    if per not in PERS:
        raise OptionsError(f"--per takes one of {', '.join(PERS)}, not {per!r}")
    if applies_to is not None and applies_to not in KINDS:
        raise OptionsError(f"--for takes one of {', '.join(KINDS)}, not {applies_to!r}")
    if credits < 0:
        raise OptionsError(f"--credits must be 0 or more, not {credits}")
    if not 0 < warn_at <= 1:
        raise OptionsError(f"the warning share must be above 0 and at most 1, not {warn_at}")


def set_budget(
    con: duckdb.DuckDBPyConnection,
    *,
    credits: int,
    per: str,
    applies_to: str | None = None,
    warn_at: float = WARN_AT,
    now: datetime,
) -> Budget:
    """Set a budget: it replaces the one of the same `per` and `applies_to`."""
    _checked(credits, per, applies_to, warn_at)
    with transaction(con):
        con.execute(
            "delete from budgets where per = ? and applies_to = ?", [per, applies_to or ALL]
        )
        con.execute(
            "insert into budgets (per, applies_to, credits, warn_at, set_at)"
            " values (?, ?, ?, ?, ?)",
            [per, applies_to or ALL, credits, warn_at, now],
        )
    return _row(per, applies_to or ALL, credits, warn_at, now)


def clear_budgets(
    con: duckdb.DuckDBPyConnection, *, per: str | None = None, applies_to: str | None = None
) -> int:
    """Remove the budgets of `per` and `applies_to` (either None: of any); how many went."""
    if per is not None and per not in PERS:
        raise OptionsError(f"--per takes one of {', '.join(PERS)}, not {per!r}")
    if applies_to is not None and applies_to not in KINDS:
        raise OptionsError(f"--for takes one of {', '.join(KINDS)}, not {applies_to!r}")
    where = (
        "(cast($per as varchar) is null or per = $per)"
        " and (cast($for as varchar) is null or applies_to = $for)"
    )
    params = {"per": per, "for": applies_to}
    with transaction(con):
        found = con.execute(f"select count(*) from budgets where {where}", params).fetchone()  # noqa: S608 - our text
        con.execute(f"delete from budgets where {where}", params)  # noqa: S608 - our text
    return int(found[0]) if found else 0


def budgets(con: duckdb.DuckDBPyConnection) -> list[Budget]:
    """Every budget, by period (day, week, month) then kind (all first); none in a warehouse
    read before migration 020 made the table."""
    if not has_table(con, "budgets"):
        return []
    rows = con.execute(
        "select per, applies_to, credits, warn_at, set_at from budgets order by"
        " list_position(['day', 'week', 'month'], per), applies_to <> 'all', applies_to"
    ).fetchall()
    return [_row(*row) for row in rows]


def _row(per: Any, applies_to: Any, credits: Any, warn_at: Any, set_at: Any) -> Budget:
    scope = None if applies_to == ALL else applies_to
    return Budget(int(credits), per, scope, float(warn_at), set_at)


# --- periods ------------------------------------------------------------------------------------


def period_of(per: str, now: datetime, reset_date: date | None = None) -> tuple[datetime, datetime]:
    """[start, end) of the period of `per` holding `now` (UTC): a day; a week from Monday; a
    month to `reset_date` when it lies ahead (read as the service's next reset), from it when
    it lies behind by less than a month (read as its last reset: the spec shows a date, not
    which), else the calendar month."""
    today = now.astimezone(UTC).date()
    if per == "day":
        start = today
        end = today + timedelta(days=1)
    elif per == "week":
        start = today - timedelta(days=today.weekday())
        end = start + timedelta(days=7)
    elif reset_date is not None and reset_date > today:
        end = reset_date
        start = _months_before(end, 1)
        while start > today:  # a reset further ahead than a month: the month holding today
            end, start = start, _months_before(start, 1)
    elif reset_date is not None and _months_before(today, 1) < reset_date <= today:
        start = reset_date
        end = _months_before(start, -1)
    else:
        start = today.replace(day=1)
        end = _months_before(start, -1)
    return _midnight(start), _midnight(end)


def _months_before(day: date, months: int) -> date:
    """The same day of the month `months` months before (after, when negative), clamped."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def reset_date_of(reset_date: str | None, period: str | None) -> date | None:
    """The service's next reset as a date, when its usage gives a monthly one that parses."""
    if not reset_date or (period or "").lower() != "monthly":
        return None
    try:
        return date.fromisoformat(reset_date[:10])
    except ValueError:
        return None


# --- what was spent -----------------------------------------------------------------------------

Alive = Callable[[str], bool]
"""Whether the process carrying a run out is alive (its reservation counts only then)."""


def kind_of(mode: str, inputs: Sequence[str]) -> Kind:
    """A run's kind as budgets name it (sql/queries/budget_spent.sql says it alike)."""
    if mode == "research":
        return "research"
    if inputs and str(inputs[0]).startswith("warehouse:"):
        return "refresh"
    return "run"


def standings(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    *,
    kind: str | None = None,
    reset_date: date | None = None,
    exclude_run: str | None = None,
) -> list[Standing]:
    """The budgets (those governing `kind`; all when None) in their current periods."""
    found = [b for b in budgets(con) if kind is None or b.governs(kind)]
    if not found:
        return []
    alive = _alive(con, now)
    out = []
    for budget in found:
        start, end = period_of(budget.per, now, reset_date)
        rows = con.execute(sql_text("queries/budget_spent"), {"start": start, "end": end})
        charged = held = 0
        for run_id, run_kind, _, run_charged, possible, outstanding, reserve in rows.fetchall():
            if run_id == exclude_run or not budget.governs(str(run_kind)):
                continue
            reserved = int(reserve) if reserve and alive(str(run_id)) else 0
            charged += int(run_charged)
            held += int(possible) + max(int(outstanding), reserved)
        out.append(Standing(budget, start, end, charged, held))
    return out


def _alive(con: duckdb.DuckDBPyConnection, now: datetime) -> Alive:
    """Whether a run still spending has a live process (a dead one's reservation lapses: its
    resume checks the budgets again before it spends)."""
    seen: dict[str, bool] = {}

    def alive(run_id: str) -> bool:
        if run_id not in seen:
            owner = owner_of(con, run_id)
            seen[run_id] = owner is not None and owner.alive(now)
        return seen[run_id]

    return alive


def refusal(found: Sequence[Standing], cost: int, what: str = "this run") -> str | None:
    """One line naming the first budget `cost` would pass (None: within every one)."""
    for s in found:
        if cost > s.left:
            return (
                f"{what} could cost up to {cost:,} credits and {s.budget.name()} has"
                f" {max(s.left, 0):,} left until {s.period_end:%Y-%m-%d} ({s.spent:,} spent):"
                " nothing was spent; raise it with `placeflow budget set`, or send less"
            )
    return None


def room(found: Sequence[Standing]) -> int | None:
    """The most that can still be spent under every budget (None: no budget applies)."""
    return min((max(s.left, 0) for s in found), default=None)


def warnings(found: Sequence[Standing]) -> list[str]:
    """A line per budget spent past its warning share."""
    return [
        f"{s.budget.name()} is {100 * s.share():.0f}% spent ({s.spent:,} of"
        f" {s.budget.credits:,} credits, {max(s.left, 0):,} left until"
        f" {s.period_end:%Y-%m-%d}); it warns past {100 * s.budget.warn_at:.0f}%"
        for s in found
        if s.budget.credits and s.share() >= s.budget.warn_at
    ]


def rest_of(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[Kind, int, int]:
    """A stored run's kind, the rest of its estimate not yet charged or released (what a
    resume may still spend), and the places of its chunks not yet sent."""
    row = con.execute(
        "select runs.mode, runs.inputs, coalesce(runs.credits_estimated, 0),"
        " (select coalesce(sum(credits), 0) from credit_ledger where credit_ledger.run_id ="
        " runs.run_id and kind in ('charge', 'release', 'possible')),"
        " (select coalesce(sum(rows), 0) from jobs where jobs.run_id = runs.run_id"
        " and status = 'planned')"
        " from runs where run_id = ?",
        [run_id],
    ).fetchone()
    if row is None:
        return "run", 0, 0
    mode, inputs, estimated, spent, planned = row
    try:
        given = json.loads(inputs or "[]")
    except ValueError:
        given = []
    rest = max(int(estimated) - int(spent), 0)
    return kind_of(str(mode), [str(i) for i in given]), rest, int(planned)
