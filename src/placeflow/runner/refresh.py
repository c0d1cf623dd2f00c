"""A refresh: the stale places of a warehouse (`placeflow.runner.stale`: which ones, oldest
first, or most likely changed first within a budget) re-checked by a run.

`refresh` sends them through the same stages as a run of files (`placeflow.run` with a
`WarehouseSource`): the source yields each stale place's stored fields as the read stage's
text, normalize (idempotent on normalised places) gives back the same place_key, and the run
records what changed (`placeflow.pipeline.changes`) in its account stage. `refresh_plan` is its
options and source, priced by `--max-credits` and the warehouse's budgets for refresh (the
refresh, and its estimate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from placeflow.errors import BudgetRefused, InputError
from placeflow.options import RunOptions, parse_duration
from placeflow.runner.budget import room
from placeflow.runner.stale import WarehouseSource, select_stale
from placeflow.runner.steps import Step, direct
from placeflow.state.budgets import budgets
from placeflow.state.runstate import Clock, unfinished_run, utc_now
from placeflow.store.warehouse import reading

if TYPE_CHECKING:
    from placeflow.events import Event
    from placeflow.pipeline.account import RunSummary
    from placeflow.runner.target import Target


@dataclass(frozen=True)
class NothingStale:
    """A refresh that found no stale place: nothing sent, no run recorded, no report written
    (a schedule's empty refresh leaves no 0-row run behind)."""

    older_than: str
    warnings: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        said = f"nothing to refresh: no place's answer is {self.older_than} old or older"
        if any("left for a later refresh" in w and "--limit" not in w for w in self.warnings):
            said = "nothing sent: what --max-credits or the budget leaves buys no stale place"
        return "; ".join((said, *self.warnings))

    def as_dict(self) -> dict[str, object]:
        return {"status": "completed", "run_id": None, "rows_read": 0, "submitted": 0,
                "succeeded": 0, "failed": 0, "charged": 0, "changes": {}, "places_changed": 0,
                "message": self.message}  # fmt: skip


def credits_per_place(target: Target, mode: str) -> int:
    """The most one place of `mode` costs by either route, from the service's rate card."""
    with target.client() as api:
        card = api.pricing()
    rates = [card.rate(key) for key in (mode, f"job_{mode}")]
    return max([r.credits for r in rates if r is not None and r.credits is not None] or [1])


def refresh_plan(
    *,
    db: Path | str,
    older_than: timedelta | str,
    target: Target,
    mode: str = "enrich",
    max_credits: int | None = None,
    limit: int | None = None,
    country: str | None = None,
    options: RunOptions | None = None,
    clock: Clock = utc_now,
) -> tuple[RunOptions, WarehouseSource]:
    """A refresh's run options and its source: the stale places, as many as `max_credits` and
    what the warehouse's budgets for refresh leave buy (`refresh`, and its estimate)."""
    age = parse_duration(older_than) if isinstance(older_than, str) else older_than
    if not Path(db).exists():
        raise InputError(f"no warehouse at {db}: a refresh re-checks the places a run loaded")
    given = (options or RunOptions()).model_dump()
    given.update(mode=mode, max_credits=max_credits, force=True)  # the source chose the stale
    given.update(dedupe="exact")  # the warehouse's places stay apart: each has its own answer
    if mode == "validate":
        given.update(attributes=(), include_summary=False)
    chosen = RunOptions.parse(given)
    cap, said = max_credits, None
    with reading(db) as con:
        governed = bool(budgets(con))
    if governed:  # spend within what the warehouse's budgets leave (and the key's balance)
        with target.client() as api:
            usage = api.usage()
        with reading(db) as con:
            left, said = room(con, kind="refresh", now=clock(), usage=usage)
        if left is not None and (cap is None or left < cap):
            cap = left
        else:
            said = None
    per_place = credits_per_place(target, mode) if cap is not None else 1
    source = WarehouseSource(
        db,
        older_than=age,
        country=country,
        limit=limit,
        budget=cap,
        credits_per_place=per_place,
        clock=clock,
        budget_said=said,
    )
    return chosen, source


def refresh(
    *,
    db: Path | str,
    older_than: timedelta | str,
    target: Target,
    mode: str = "enrich",
    max_credits: int | None = None,
    limit: int | None = None,
    country: str | None = None,
    options: RunOptions | None = None,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = utc_now,
) -> RunSummary | NothingStale:
    """Re-check the places of `db` whose answer is `older_than` old or older (0: all of them);
    `NothingStale` when no place is (and no unfinished refresh of the same terms waits).

    A run like any other (`placeflow.run`; estimate first, ledger, resume, change recording),
    whose input is the warehouse. With `max_credits` smaller than the stale set's cost it does
    not refuse: the places most likely to have changed go first, as many as the budget buys.
    `options` (mode and max_credits set from the arguments) tunes the rest, e.g. poll_timeout.
    """
    from placeflow.runner.orchestrate import run
    from placeflow.runner.prepare import fingerprint

    chosen, source = refresh_plan(
        db=db, older_than=older_than, target=target, mode=mode, max_credits=max_credits,
        limit=limit, country=country, options=options, clock=clock,
    )  # fmt: skip
    with reading(db) as con:
        prior = unfinished_run(con, fingerprint(source, chosen))
    if prior is None:
        _, info = source.look(chosen)
        if source.stale_found == 0:  # nothing stale at all: no run recorded, no report written
            return NothingStale(older_than=str(older_than), warnings=info.warnings)
    try:
        summary = run(source, options=chosen, db=db, target=target, step=step,
                      on_event=on_event, clock=clock)  # fmt: skip
    except BudgetRefused:
        if prior is not None or source.budget is None:
            raise
        # another run took part of what the budget left between the choice and its check
        # (which holds): the stale places are chosen again within what is left now, once
        chosen, again = refresh_plan(
            db=db, older_than=older_than, target=target, mode=mode, max_credits=max_credits,
            limit=limit, country=country, options=options, clock=clock,
        )  # fmt: skip
        if again.budget is None or again.budget >= source.budget:
            raise  # not a budget another run took: the refusal stands
        summary = run(again, options=chosen, db=db, target=target, step=step,
                      on_event=on_event, clock=clock, new_run=True)  # fmt: skip
        said = (
            f"another run took part of the budget while this refresh chose: chosen again"
            f" within the {again.budget:,} credit(s) left"
        )
        return replace(summary, message="; ".join(m for m in (summary.message, said) if m))
    if prior is None or summary.run_id != prior or summary.status != "interrupted":
        return summary
    # The earlier refresh of the same terms was resumed and still holds chunks only its resume
    # can settle (or --resend-uncertain sends): the other stale places are planned anew, its
    # places left to it (claims), so a schedule never stalls on it.
    rest = run(source, options=chosen, db=db, target=target, step=step, on_event=on_event,
               clock=clock, new_run=True)  # fmt: skip
    held = (
        f"the earlier refresh {prior} still holds chunks: {summary.message}"
        if summary.message
        else f"the earlier refresh {prior} still holds chunks"
    )
    return replace(rest, message="; ".join(m for m in (rest.message, held) if m))


__all__ = [  # the selection's names passed on: callers of the refresh import them from here
    "NothingStale",
    "WarehouseSource",
    "credits_per_place",
    "refresh",
    "refresh_plan",
    "select_stale",
]
