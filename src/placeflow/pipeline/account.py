"""Account stage: close the run and sum it up: outcomes, chunks, and credits, what the ledger
expects beside what the service's usage shows, and the difference.

The ledger records holds, charges and releases by the spec's rules as each chunk settles; the
service's `current_usage` before and after gives the delta it actually booked. Both are
reported side by side; a difference is shown, never hidden (another user of the same key, a
charge the client could not rule out, or a disagreement worth raising with the provider).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import UsageUnknown
from placeflow.pipeline.changes import record_changes
from placeflow.pipeline.reconcile import balance, twice_line
from placeflow.pipeline.summary import ResearchInfo as ResearchInfo
from placeflow.pipeline.summary import RunSummary as RunSummary
from placeflow.state.lifecycle import UNCERTAIN
from placeflow.state.owners import owner_of
from placeflow.state.runbook import RunBook
from placeflow.state.runread import Claim, ledger_totals


@dataclass(frozen=True)
class Tally:
    """What a run's work came to, as its request kind counts it: the chunks of a run of the
    place endpoints (`jobs_tally`), or a research run's requests
    (`placeflow.pipeline.research.account.research_tally`). The account does the rest."""

    succeeded: int
    failed: int
    chunks: int
    bad: int  # failed, timed out or held (`chunks_failed`)
    unfinished: int  # not settled: the run is interrupted while any is
    lost: Mapping[int, int] = field(default_factory=dict)
    """Chunks held because their answers were lost, by number: their rows (`lost_answers`)."""
    most: int | None = None  # the most its work can have been billed (None: rows submitted)
    possible: int | None = None  # may be billed without answer (None: runs.possible_extra_credits)
    possible_why: str | None = None
    """Why a usage beyond the ledger, up to `possible`, is (the balance's reason)."""
    outcomes: bool = True
    """Place outcomes: compared for changes, and every row rejected ends all_rejected."""
    research: ResearchInfo | None = None


def jobs_tally(con: duckdb.DuckDBPyConnection, run_id: str) -> Tally:
    """A run's outcomes (validations, enrichments) and its chunks (jobs)."""
    outcomes = con.execute(
        "select count(*) filter (where success), count(*) filter (where not success)"
        " from (select success from validations where run_id = ?"
        "       union all select success from enrichments where run_id = ?)",
        [run_id, run_id],
    ).fetchone()
    succeeded, failed = (int(outcomes[0]), int(outcomes[1])) if outcomes else (0, 0)
    states = con.execute(
        "select count(*),"
        " count(*) filter (where status in ('failed', 'timed_out') or error_code is not null),"
        " count(*) filter (where status = 'loaded' or status in ('failed', 'timed_out'))"
        " from jobs where run_id = ?",
        [run_id],
    ).fetchone()
    chunks, bad, ended = (int(v) for v in states) if states else (0, 0, 0)
    # A chunk ends failed, timed out (then cancelled, its processed rows loaded) or loaded.
    return Tally(succeeded, failed, chunks, bad, chunks - ended, lost_answers(con, run_id))


def _fuzzy_duplicates(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    row = con.execute(
        "select count(*) from run_rows where run_id = ? and match_rule = 'probabilistic'"
        " and disposition = 'duplicate'",
        [run_id],
    ).fetchone()
    return int(row[0]) if row else 0


def _rejected_by_field(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    rows = con.execute(
        "select coalesce(field, 'row'), count(*) from rejects where run_id = ?"
        " group by all order by 2 desc, 1",
        [run_id],
    ).fetchall()
    return {str(name): int(n) for name, n in rows}


def lost_answers(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[int, int]:
    """Chunks held as uncertain with nothing of theirs followed at the service (no batch_id: a
    synchronous batch whose answer was lost, or a job POST whose answer was lost past the
    idempotency window), by chunk number: their rows, the most each may have cost."""
    rows = con.execute(
        "select chunk_no, rows from jobs where run_id = ? and error_code = ? and batch_id is null"
        " and (status = 'submitted' or (status = 'planned' and sending_at is not null))"
        " order by chunk_no",
        [run_id, UNCERTAIN],
    ).fetchall()
    return {int(n): int(r) for n, r in rows}


def read_usage_after(api: PlaceApiClient) -> tuple[int | None, str | None]:
    """The key's usage at the end of a run, or None and a note saying why it is unknown: work
    already done stands (a run or a research), only its figure is missing."""
    try:
        return api.usage().current_usage, None
    except UsageUnknown as exc:
        return None, f"usage after the run is unknown ({exc}); the ledger is not balanced"


def _claims_note(claims: list[Claim]) -> str | None:
    """What became of the places left to other runs, and the command that finishes the rest."""
    said = []
    for c in claims:
        if c.waiting:
            said.append(
                f"{c.waiting:,} place(s) are being bought by run {c.owner_run_id}"
                f" ({c.owner_status}): their answers land when it loads them (`placeflow"
                f" resume {c.owner_run_id}` finishes it if its process is gone)"
            )
        if c.unanswered:
            said.append(
                f"{c.unanswered:,} place(s) left to run {c.owner_run_id} ended unanswered"
                " there: the next run buys them"
            )
    return "; ".join(said) or None


def _read_and_rejected(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int]:
    """The run's rows read and rejected, as its opening recorded them."""
    row = con.execute("select rows_read, rejected from runs where run_id = ?", [run_id]).fetchone()
    return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)


def _left_line(con: duckdb.DuckDBPyConnection, left: dict[str, int], now: datetime) -> str:
    """The runs whose claimed places still have no answer, and what finishes each: a run
    whose process is gone must be resumed (this run never buys its places)."""
    said = []
    for run_id, places in left.items():
        owner = owner_of(con, run_id)
        if owner is not None and owner.alive(now):
            said.append(
                f"{places:,} place(s) are still being bought by run {run_id}"
                f" ({owner.describe()}): they are answered when it loads them"
            )
        else:
            said.append(
                f"{places:,} place(s) are left to run {run_id}, whose process is gone: resume it"
                f" with `placeflow resume {run_id}` (this run does not buy them)"
            )
    return "not completed: " + "; ".join(said)


def account(
    state: RunBook,
    api: PlaceApiClient | None,
    *,
    started: datetime | None = None,
    tally: Callable[[duckdb.DuckDBPyConnection, str], Tally] = jobs_tally,
) -> RunSummary:
    """Close the run: outcome counts, usage after, reconciliation, final status and message.

    `tally` counts the run's work by its request kind (a research run's requests, its
    `research_tally`). `seconds` is the run's one time, as `placeflow runs` and the report show
    it: from its opening (when it began reading) to now; `started` (this invocation's start)
    is kept for callers and no longer counts.
    """
    con, run_id = state.con, state.run_id
    now = state.now()
    t = tally(con, run_id)
    succeeded, failed, chunks_total, bad, unfinished = (
        t.succeeded, t.failed, t.chunks, t.bad, t.unfinished
    )  # fmt: skip
    lost = dict(t.lost)
    run = con.execute(
        "select usage_before, submitted, status, created_at, target, possible_extra_credits,"
        " message from runs where run_id = ?",
        [run_id],
    ).fetchone()
    assert run is not None
    usage_before, submitted, status, created_at, target, extra, stored = run
    extra = int(extra or 0) if t.possible is None else t.possible
    usage_after, usage_note = None, None
    if api is not None and usage_before is not None:
        usage_after, usage_note = read_usage_after(api)
        con = state.con  # the writer may have let go while the usage was asked for
    totals = ledger_totals(con, run_id)
    delta = (
        usage_after - usage_before if usage_after is not None and usage_before is not None else None
    )
    answered = succeeded + failed
    if status == "refused":
        final, message = "refused", None
    elif unfinished:
        final = "interrupted"
        message = (
            stored
            if status == "interrupted" and stored
            else f"{unfinished} chunk(s) unfinished: `placeflow resume {run_id}` finishes them"
        )
    elif bad:
        final = "completed_with_failures"
        message = (
            f"{bad} chunk(s) failed or timed out; their places were not answered and are"
            " retried by the next run"
        )
    else:
        final, message = "completed", None
    read, rejected = _read_and_rejected(con, run_id)
    if final == "completed" and read and rejected == read and t.outcomes:
        final = "all_rejected"  # every row rejected: nothing to send, and not a success (exit 6)
        message = (
            f"every one of the {read:,} input rows was rejected, so nothing was sent; each"
            f" row's reason: placeflow rows {run_id} --only rejected --out -"
        )
    if delta is not None and unfinished == len(lost) and final != "refused":
        diff = delta - totals["charge"] - totals["adjustment"]
        balance_note = balance(
            state, delta, totals, submitted=int(submitted) if t.most is None else t.most,
            extra=extra, journal=api.journal if api is not None else None, lost=lost,
            why=t.possible_why if 0 < diff <= extra else None,
        )  # fmt: skip
        totals = ledger_totals(con, run_id)
        message = "; ".join(m for m in (message, balance_note) if m) or None
    message = "; ".join(m for m in (message, usage_note) if m) or None
    claims = state.claims()
    left = {c.owner_run_id: c.waiting for c in claims if c.waiting}
    message = "; ".join(m for m in (message, _claims_note(claims)) if m) or None
    twice = twice_line(state)
    if twice:  # one line saying what the service billed twice, first
        message = "; ".join(m for m in (twice, message) if m)
    if final in ("completed", "completed_with_failures"):
        if left:  # not every place answered: it says so, and what finishes them (exit 4)
            final = "left_to_other_run"
            message = "; ".join(m for m in (_left_line(con, left, now), message) if m)
        elif twice:
            final = "double_charged"
    if final != "refused":
        stored_as = "completed" if final == "completed_with_failures" else final
        state.closed(
            status=stored_as,
            succeeded=succeeded,
            failed=failed,
            usage_after=usage_after,
            message=message,
        )
    found = record_changes(con, run_id, now=now) if final != "refused" and t.outcomes else None
    counts = con.execute(
        "select rows_read, rejected, duplicates, skipped_fresh, credits_estimated, message,"
        " coalesce(held_failing, 0), finished_at, possible_extra_credits from runs"
        " where run_id = ?",
        [run_id],
    ).fetchone()
    assert counts is not None
    opened = created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC)
    stored_end: datetime | None = counts[7]  # the end `closed` stored, `runs` and the report's
    closed_at = now if stored_end is None else stored_end
    closed_at = closed_at if closed_at.tzinfo else closed_at.replace(tzinfo=UTC)
    return RunSummary(
        run_id=run_id,
        status=final,
        target=str(target),
        rows_read=int(counts[0]),
        rejected=int(counts[1]),
        rejected_by_field=_rejected_by_field(con, run_id) if counts[1] else {},
        duplicates=int(counts[2]),
        fuzzy_duplicates=_fuzzy_duplicates(con, run_id),
        skipped_fresh=int(counts[3]),
        held_failing=int(counts[6]),
        claimed=sum(c.places for c in claims),
        claims_answered=sum(c.answered for c in claims),
        claims_left=left,
        submitted=int(submitted),
        succeeded=succeeded,
        failed=failed,
        not_answered=int(submitted) - answered,
        credits_estimated=int(counts[4]),
        held=totals["hold"],
        charged=totals["charge"],
        released=totals["release"],
        usage_before=usage_before,
        usage_after=usage_after,
        usage_delta=delta,
        ledger_vs_usage=None if delta is None else delta - totals["charge"] - totals["adjustment"],
        adjustment=totals["adjustment"],
        difference=None if delta is None else delta - totals["charge"],
        # the balance may have found more
        possible_extra_credits=int(counts[8] or 0) if t.possible is None else t.possible,
        chunks=chunks_total,
        chunks_failed=bad,
        seconds=round((closed_at - opened).total_seconds(), 3),
        message=message or counts[5],
        changes=found.by_kind if found else {},
        places_changed=found.places_changed if found else 0,
        changed_per_credit=round(found.places_changed / totals["charge"], 4)
        if found and totals["charge"]
        else None,
        research=t.research,
    )
