"""Research's budget stage: what its unsettled requests can still cost, checked against
`--max-credits` (less what the run was charged or possibly charged already) and the key's
balance by the run's own rule (`placeflow.pipeline.plan.refusal`), then against the warehouse's
budgets (as a run's are), and, on a new run, its first request priced by the service
(`estimate_only`) as the rate card prices it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from placeflow.api.client import PlaceApiClient
from placeflow.api.models import UsageResponse
from placeflow.options import RunOptions
from placeflow.pipeline.plan import Estimate, refusal
from placeflow.pipeline.research.estimate import refusal_of
from placeflow.pipeline.research.plan import FIELD_RATE, ROUTE
from placeflow.pipeline.research.prepare import Prepared
from placeflow.state.runbook import RunBook
from placeflow.state.runread import ledger_totals
from placeflow.store.warehouse import sql_text
from placeflow.store.writer import Writer

Within = Callable[[int, UsageResponse], str | None]
"""Why `credits` more would pass one of the warehouse's budgets (None: none), given the usage."""


@dataclass(frozen=True)
class Budget:
    """The budget stage's info: the most the rest can cost (`credits`), whether it was refused
    (and why), what was charged and possibly charged before, the key's usage as this invocation
    read it (`usage_now`) and the usage the run is accounted from (`usage_before`: the first
    invocation's reading, kept with the run)."""

    credits: int
    refused: int
    message: str | None = None
    charged: int = 0
    possible: int = 0
    usage_now: int | None = None
    usage_before: int | None = None


def budget(
    db: Writer,
    api: PlaceApiClient,
    run_id: str | None,
    *,
    max_credits: int | None,
    prepared: Prepared | None = None,
    within: Within | None = None,
    priced: bool = False,
) -> Budget:
    """The budget stage (see the module's docstring), on the run's writer `db` (its connection
    taken afresh after each request): of a new run's plan (`prepared`, before
    it is opened), else of the requests the run `run_id` has not settled; `within` checks the
    warehouse's budgets (`placeflow.runner.budget.within_budgets`) once the balance allows;
    `priced`: the service priced the first request already (`--estimate`)."""
    if prepared is not None:
        cost, charged, possible = prepared.estimate, 0, 0
    else:
        assert run_id is not None
        totals = ledger_totals(db.con, run_id)
        charged, possible = totals["charge"], totals["possible"]
        left = db.execute(sql_text("queries/research_to_spend"), {"run_id": run_id})
        to_spend, places, requests = (int(v) for v in left.fetchone() or (0, 0, 0))
        cost = Estimate(
            places=places, credits=to_spend, requests=requests, route=ROUTE, rate_key=FIELD_RATE,
            credits_per_place=to_spend // places if places else 0,
        )  # fmt: skip
    cap = None if max_credits is None else max_credits - charged - possible
    capped = RunOptions(max_credits=max(cap, 0)) if cap is not None else RunOptions()
    why = refusal(cost, capped, available=None)
    if why is not None and cap is not None and charged + possible:
        why = (
            f"the rest of the research would cost up to {cost.credits:,} credits, over the budget"
            f" left ({cap:,} of --max-credits {max_credits:,} after"
            f" {charged + possible:,} charged or possibly charged): raise --max-credits to go on"
        )
    usage_now: int | None = None
    if why is None and cost.credits:
        usage = api.usage()
        why = refusal(cost, RunOptions(), available=usage.spendable)
        usage_now = usage.current_usage
        if why is None and within is not None:  # the warehouse's budgets, after the balance
            why = within(cost.credits, usage)
    if why is None and prepared is not None and cost.credits and not priced:
        why = refusal_of(api, prepared.plan)  # the service prices the first request alike
    usage_before = usage_now
    if run_id is not None:
        RunBook(db, run_id).update(max_credits=max_credits)  # as last given
        kept = db.execute("select usage_before from runs where run_id = ?", [run_id]).fetchone()
        usage_before = int(kept[0]) if kept is not None and kept[0] is not None else usage_now
    return Budget(
        credits=cost.credits, refused=int(why is not None), message=why, charged=charged,
        possible=possible, usage_now=usage_now, usage_before=usage_before,
    )  # fmt: skip
