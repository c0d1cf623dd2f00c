"""Whether a chunk whose request may have reached the service can be sent again.

A job chunk records `sending_at` before its POST. Found on resume without a batch_id, its
answer was lost: within `idempotency_window` the POST is replayed under the same
Idempotency-Key and body (the service replays the job, never charging twice). Older than
that, the service may have forgotten the key (the spec does not show its retention), so a
replay could create and bill a second job. Then the usage decides, where the key is ours
alone: when `current_usage` moved by exactly what the run's own ledger explains and none of
its jobs is in flight, the POST never created a job and is sent; otherwise the chunk is held
as uncertain and said so (`--resend-uncertain` sends it anyway, accepting the risk).

The same window bounds the run's own retries of a POST (issue 34): the client replays a lost
answer only while it is within the window of the first attempt that may have reached the
service (`PlaceApiClient.submit_job_body(replay_window=...)`), and past it
`pipeline.submit.lost_post` asks the usage the same question, holding the chunk as uncertain
unless it shows no job was created.

The window defaults to 60 s: the spec asks for a prompt retry and shows no retention; a minute
covers the client's own retries (about 12 s with the default policy) and a crash and an
immediate resume (a replay then re-attaches, as the kill tests show), while a service
forgetting keys sooner needs a shorter window (`--idempotency-window`): past it the usage is
asked (one request), and a chunk the usage cannot clear is held, never paid twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import UsageUnknown
from placeflow.options import RunOptions
from placeflow.pipeline.reconcile import concurrent_runs
from placeflow.state.records import Chunk
from placeflow.state.runstate import RunState
from placeflow.store.warehouse import sql_text


@dataclass(frozen=True)
class Verdict:
    send: bool
    why: str
    replay: bool = False
    """Sent as a replay of the earlier POST (within the window), not as a new one."""


def post_age(chunk: Chunk, now: datetime) -> float:
    """Seconds since a chunk's POST was written ahead (`sending_at`; 0 when it was not)."""
    sent = chunk.sending_at
    if sent is None:
        return 0.0
    if sent.tzinfo is None:
        sent = sent.replace(tzinfo=now.tzinfo)
    return (now - sent).total_seconds()


def _explained(state: RunState, run_id: str) -> int | None:
    """What `run_id`'s ledger explains of the key's usage, when all of it is settled: none of
    its jobs in flight, no POST or synchronous batch whose answer was lost (None otherwise)."""
    found = state.con.execute(sql_text("queries/run_usage_explained"), {"run_id": run_id})
    row = found.fetchone()
    assert row is not None
    lost = state.con.execute(
        "select count(*) from jobs where run_id = ? and ((status = 'planned' and sending_at is"
        " not null) or (status = 'submitted' and batch_id is null))",
        [run_id],
    ).fetchone()
    return None if int(row[1]) or (lost and int(lost[0])) else int(row[0])


def others_explained(state: RunState, others: list[str]) -> int | None:
    """What the runs beside this one (`concurrent_runs`) spent since this run read the usage:
    each must be of this warehouse, opened after this run (its whole spend is after this
    run's reading) and settled (`_explained`); None when one is not (the usage cannot tell)."""
    if not others:
        return 0
    marks = ", ".join("?" for _ in others)
    rows = state.con.execute(
        f"select run_id from runs where run_id in ({marks}) and usage_before is not null"  # noqa: S608 - marks
        " and created_at > (select created_at from runs where run_id = ?)",
        [*others, state.run_id],
    ).fetchall()
    if len(rows) != len(set(others)):
        return None
    total = 0
    for (run_id,) in rows:
        spent = _explained(state, str(run_id))
        if spent is None:
            return None
        total += spent
    return total


def usage_unexplained(api: PlaceApiClient, state: RunState) -> int | None:
    """current_usage less the run's usage before and what its ledger explains, and what the
    runs opened after it on the key, all settled and of this warehouse, spent (a run that
    overlapped a dead owner's); None when the usage cannot be had, another user of the key
    cannot be explained, or a job of the run is in flight."""
    row = state.con.execute(
        "select usage_before from runs where run_id = ?", [state.run_id]
    ).fetchone()
    if row is None or row[0] is None:
        return None
    besides = others_explained(state, concurrent_runs(state, api.journal))
    found = state.con.execute(
        sql_text("queries/run_usage_explained"), {"run_id": state.run_id}
    ).fetchone()
    assert found is not None
    explained, in_flight = int(found[0]), int(found[1])
    if in_flight or besides is None:
        return None
    try:
        now = api.usage().current_usage
    except UsageUnknown:
        return None
    return now - int(row[0]) - explained - besides


def vet(
    api: PlaceApiClient, state: RunState, chunk: Chunk, options: RunOptions, now: datetime
) -> Verdict:
    """Send, replay or hold a chunk that was being sent when the run stopped."""
    if chunk.sending_at is None:
        return Verdict(True, "never sent")
    age = post_age(chunk, now)
    if age <= options.idempotency_window:
        why = f"replayed {age:.0f} s after its POST, under its Idempotency-Key"
        return Verdict(True, why, replay=True)
    if options.resend_uncertain:
        return Verdict(True, "sent again: --resend-uncertain accepts a possible double charge")
    moved = usage_unexplained(api, state)
    if moved == 0:
        return Verdict(True, "usage shows its earlier POST created no job; sent")
    reason = (
        "the usage cannot tell (another user of the key, a job in flight, or no figure)"
        if moved is None
        else f"usage moved {moved:,} credits more than the run's ledger explains"
    )
    return Verdict(
        False,
        f"chunk {chunk.chunk_no}: its POST {age:.0f} s ago got no answer and may have created a"
        f" job the service no longer replays; {reason}. Held as uncertain:"
        " --resend-uncertain sends it again, accepting a possible double charge",
    )
