"""Account for a research run: its row in runs, and what its requests came to (a `Tally`) for
the run's account (`placeflow.pipeline.account.account`), which closes it, balances its ledger
to the key's usage and sums it up in the run's `RunSummary`, the research figures as its typed
`ResearchInfo`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from placeflow.pipeline.account import ResearchInfo, Tally
from placeflow.state.runbook import run_row as runs_row
from placeflow.store.warehouse import sql_text

if TYPE_CHECKING:
    from placeflow.pipeline.plan import Estimate
    from placeflow.pipeline.research.plan import Rates, ResearchOptions


def run_row(
    run_id: str,
    created_at: datetime,
    options: ResearchOptions,
    *,
    fingerprint: str,
    inputs: tuple[str, ...],
    target: str,
    key_hint: str,
    estimate: Estimate,
    rates: Rates,
    counts: Mapping[str, int],
) -> dict[str, Any]:
    """A new research run's row in runs, as a run's (`placeflow.state.runbook.run_row`): mode
    research, its signature, its options (with how its inputs were read, `read_as`, for
    `placeflow rows`), its counts, and research's own columns: its fields, flags and rates."""
    spec = options.spec
    stored = {
        "mode": "research", "max_credits": options.max_credits, "sample": options.sample,
        "max_age_days": options.run.max_age_days, "force": options.run.force,
        "read_as": options.reading().model_dump(mode="json"),
    }  # fmt: skip
    return {
        "run_id": run_id,
        **runs_row(
            created_at, status="planned", mode="research", signature=spec.signature(),
            options=json.dumps(stored), inputs=inputs, target=target, key_hint=key_hint,
            fingerprint=fingerprint, credits_estimated=estimate.credits, counts=counts,
            fields=spec.fields_json(), verify_identity=spec.verify_identity,
            validate_existence=spec.validate_existence, sample=options.sample,
            max_credits=options.max_credits, credits_per_field=rates.per_field,
            credits_per_identity=rates.per_identity,
        ),
    }  # fmt: skip


def research_tally(con: duckdb.DuckDBPyConnection, run_id: str) -> Tally:
    """A research run's places answered and errored, and its requests: those lost or uncertain
    are not settled (the run stays interrupted: the same command, with --resend-uncertain,
    buys them again), nor is one planned or sent. Its ledger's bound is what its requests can
    have been billed (each send at most its credits_max); a usage beyond the ledger, up to the
    credits held as possibly billed, is what those requests were billed."""
    totals = con.execute(sql_text("queries/research_totals"), {"run_id": run_id}).fetchone()
    assert totals is not None
    requests, answered_requests, open_requests, doubtful, answered, errored = (
        int(v) for v in totals[:6]
    )
    possible, most = int(totals[7]), int(totals[9])
    why = f"request(s) held as possibly billed ({possible:,} credits) were billed"
    return Tally(
        answered, errored, requests, doubtful, open_requests + doubtful, most=most,
        possible=possible, possible_why=why, outcomes=False,
        research=ResearchInfo(requests_open=open_requests, requests_answered=answered_requests),
    )  # fmt: skip
