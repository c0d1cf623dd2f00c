"""The research estimate checked against the service before anything is spent: the first
request's `estimate_only` answer must equal the rate card's price, and `--estimate` prints the
whole estimate (spending nothing)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import Unprocessable
from placeflow.errors import EXIT_OK, EXIT_REFUSED, RateCardError
from placeflow.pipeline.plan import Estimate
from placeflow.pipeline.research.plan import Rates, requests_of
from placeflow.pipeline.research.refused import policy_message


def check_estimate(api: PlaceApiClient, plan: pl.DataFrame) -> None:
    """The service's estimate_only answer for the plan's first request must equal the local
    one (`plan`: the planned places, or one row per request)."""
    if plan.height == 0:
        return
    first = requests_of(plan).row(0, named=True)
    body = {**json.loads(first["body"]), "estimate_only": True}
    response = api.deep_research(body, allow_double_charge=True)  # estimate_only is free
    said = response.meta.estimated_credits if response.meta else None
    if said != first["credits_max"]:
        raise RateCardError(
            f"the rate card prices the first request at {first['credits_max']} credits but the"
            f" service estimates {said}: refusing to spend on a wrong estimate"
        )


def refusal_of(api: PlaceApiClient, plan: pl.DataFrame) -> str | None:
    """Why the estimate is refused (a wrong rate card, a field refused by policy), or None."""
    try:
        check_estimate(api, plan)
    except RateCardError as exc:
        return str(exc)
    except Unprocessable as exc:
        return policy_message(exc)
    return None


def estimate_summary(
    api: PlaceApiClient,
    *,
    plan: pl.DataFrame,
    run_rows: pl.DataFrame,
    rows_read: int,
    estimate: Estimate,
    rates: Rates,
    target: str,
) -> dict[str, Any]:
    """`--estimate`: what the research would cost, checked with the service; nothing spent."""
    message = refusal_of(api, plan)
    code = EXIT_OK if message is None else EXIT_REFUSED
    by = dict(run_rows.group_by("disposition").len().iter_rows())
    e = estimate
    return {
        "status": "estimated" if code == EXIT_OK else "refused", "target": target,
        "rows_read": rows_read, "rejected": by.get("rejected", 0),
        "duplicates": by.get("duplicate", 0), "skipped_fresh": by.get("skipped_fresh", 0),
        "to_send": e.places, "requests": e.requests, "credits_estimated": e.credits,
        "credits_per_row": e.credits_per_place, "credits_per_field": rates.per_field,
        "credits_per_identity": rates.per_identity, "message": message, "exit_code": code,
    }  # fmt: skip
