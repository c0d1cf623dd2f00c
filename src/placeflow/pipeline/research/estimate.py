"""The research estimate checked against the service before anything is spent: the first
request's `estimate_only` answer must equal the rate card's price, and a field the service's
policy refuses is said (`--estimate` says either as the run's preview says a refusal:
`placeflow.runner.research.estimate`)."""

from __future__ import annotations

import json

import polars as pl

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import Unprocessable
from placeflow.errors import RateCardError
from placeflow.pipeline.research.plan import requests_of
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
