"""Account for a research run: its row in runs, and the summary `placeflow run`'s shape (rows,
places, credits estimated/charged, usage delta) with the research figures."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.journal import SpendJournal
from placeflow.pipeline.account import read_usage_after
from placeflow.pipeline.reconcile import balance
from placeflow.state.runbook import RunBook
from placeflow.store.warehouse import sql_text
from placeflow.store.writer import Writer

if TYPE_CHECKING:
    from placeflow.pipeline.plan import Estimate
    from placeflow.pipeline.research.plan import Rates, ResearchOptions


def set_run(con: duckdb.DuckDBPyConnection, run_id: str, **values: Any) -> None:
    RunBook(con, run_id).update(**values)


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
) -> dict[str, Any]:
    """A new research run's row in runs: mode research, its signature, its options (with how
    its inputs were read, `read_as`, for `placeflow rows`), its fields, flags and rates."""
    spec = options.spec
    stored = {
        "mode": "research", "max_credits": options.max_credits, "sample": options.sample,
        "max_age_days": options.run.max_age_days, "force": options.run.force,
        "read_as": options.reading().model_dump(mode="json"),
    }  # fmt: skip
    return {
        "run_id": run_id, "created_at": created_at, "status": "planned", "mode": "research",
        "signature": spec.signature(), "options": json.dumps(stored),
        "fields": spec.fields_json(), "verify_identity": spec.verify_identity,
        "validate_existence": spec.validate_existence, "sample": options.sample,
        "max_credits": options.max_credits, "fingerprint": fingerprint,
        "inputs": json.dumps(list(inputs)), "target": target, "key_hint": key_hint or None,
        "credits_estimated": estimate.credits, "credits_per_field": rates.per_field,
        "credits_per_identity": rates.per_identity,
    }  # fmt: skip


def summary(
    db: Writer,
    api: PlaceApiClient,
    run_id: str,
    code: int,
    now: datetime,
    started: datetime,
    *,
    account: bool,
    journal: SpendJournal | None = None,
) -> dict[str, Any]:
    """The run's summary, the shape `placeflow run` prints, with the research figures. A run
    that completed with the key's usage known has its ledger balanced to the usage delta
    (`placeflow.pipeline.reconcile.balance`, as a run's: one signed adjustment, unless another
    run or process used the key meanwhile, or the delta is more than the run could explain).
    `db` is the run's writer."""
    usage_after, usage_note = read_usage_after(api) if account else (None, None)
    con = db.con  # taken after the usage's request, which lets the warehouse go
    if usage_after is not None:
        set_run(con, run_id, usage_after=usage_after)
    status = con.execute("select status from runs where run_id = ?", [run_id]).fetchone()
    if status is not None and status[0] in ("completed", "refused"):
        set_run(con, run_id, finished_at=now)
    run = con.execute(sql_text("queries/research_run"), {"run_id": run_id}).fetchone()
    assert run is not None
    totals = con.execute(sql_text("queries/research_totals"), {"run_id": run_id}).fetchone()
    assert totals is not None
    requests, answered_requests, open_requests, doubtful, answered, errored = (
        int(v) for v in totals[:6]
    )
    charged, possible, adjusted, most = (int(v) for v in totals[6:])
    set_run(con, run_id, succeeded=answered, failed=errored)
    before, after = run[8], run[9]
    delta = after - before if after is not None and before is not None else None
    balanced = None
    if delta is not None and run[0] == "completed":  # settled: nothing open, nothing doubtful
        book = RunBook(con, run_id, clock=lambda: now)
        ledger = {"charge": charged, "adjustment": adjusted}
        diff = delta - charged - adjusted
        why = None
        if 0 < diff <= possible:
            why = f"request(s) held as possibly billed ({possible:,} credits) were billed"
        balanced = balance(
            book, delta, ledger, submitted=most, extra=possible, journal=journal, why=why
        )
        found = con.execute(
            "select coalesce(sum(credits), 0) from credit_ledger"
            " where run_id = ? and kind = 'adjustment'",
            [run_id],
        ).fetchall()
        adjusted = int(found[0][0])
        if balanced:  # kept with the run, as a run's balance note is
            set_run(con, run_id, message="; ".join(m for m in (run[10], balanced) if m))
    return {
        "run_id": run_id, "status": run[0], "target": run[1], "rows_read": run[2],
        "rejected": run[3], "duplicates": run[4], "skipped_fresh": run[5],
        "submitted": run[6], "succeeded": answered, "failed": errored,
        "not_answered": int(run[6]) - answered - errored,
        "credits_estimated": run[7] or 0, "held": 0, "charged": charged, "released": 0,
        "usage_before": before, "usage_after": after, "usage_delta": delta,
        "ledger_vs_usage": None if delta is None else delta - charged - adjusted,
        "adjustment": adjusted, "possible_extra_credits": possible, "chunks": requests,
        "chunks_failed": doubtful, "requests_open": open_requests,
        "requests_answered": answered_requests,
        "seconds": round((now - started).total_seconds(), 3),
        "message": "; ".join(m for m in (run[10], balanced, usage_note) if m) or None,
        "exit_code": code,
    }  # fmt: skip
