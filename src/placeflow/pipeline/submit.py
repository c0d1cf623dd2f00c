"""Submit stage: send a planned chunk, write-ahead.

A bulk job is POSTed under its Idempotency-Key with the exact body stored with the run, and
its batch_id and hold are committed at once: a resumed run POSTs the same key and body and the
service replays the job instead of charging again. A synchronous batch (enrich-batch of up to
ten, or one validate) is answered in the same request; its answer is written as the chunk's
result file, ready to load. Synchronous batches have no Idempotency-Key, so one whose answer was
lost (a reset after the request went out, or a crash mid-call) is never re-sent blind: only
when the usage shows it was not billed (the key ours alone, nothing in flight), or with
`--resend-uncertain`; otherwise it is held as uncertain and the run says so.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import ApiError, OutcomeUnknown
from placeflow.api.jobref import PendingJob
from placeflow.api.models import TERMINAL_JOB_STATUSES
from placeflow.events import ChunkSubmitted, CreditsHeld, Emit, Note
from placeflow.fields import JobKind
from placeflow.pipeline.fetch import Fetched
from placeflow.pipeline.resend import post_age, usage_unexplained
from placeflow.state.lifecycle import UNCERTAIN
from placeflow.state.records import Chunk
from placeflow.state.runstate import RunState


@dataclass(frozen=True)
class SubmitInfo:
    """A job accepted (or re-attached): `due` is when, on the client's clock, it should end;
    `created_at` and `eta_completion_at` are what the service answered (its own clock), from
    which the poller learns how true its etas are."""

    chunk_no: int
    batch_id: str
    rows: int
    replayed: bool
    due: float | None
    created_at: str | None = None
    eta_completion_at: str | None = None

    def pending(self, now: float) -> PendingJob:
        """The job for a poller to follow, its eta what remains of it at `now`."""
        eta = None if self.due is None else max(0.0, self.due - now)
        return PendingJob(self.batch_id, eta, self.created_at, self.eta_completion_at)


@dataclass(frozen=True)
class Uncertain:
    """A chunk held as uncertain (`RunState.uncertain`): its request may have been charged
    without an answer, so it is not sent again unasked; `why` says so, for the run's message."""

    chunk_no: int
    why: str


def submit_job(
    api: PlaceApiClient,
    state: RunState,
    chunk: Chunk,
    *,
    kind: JobKind,
    emit: Emit,
    window: float,
    again: bool = True,
) -> SubmitInfo | Uncertain:
    """POST a planned job chunk under its Idempotency-Key; store the batch_id and the hold.

    A POST whose answer is lost is replayed only within the idempotency `window` of its first
    send (`PlaceApiClient.submit_job_body`'s replay_window; a resumed chunk's from its
    `sending_at`): past it the usage judges it (`lost_post`), and it is held as `Uncertain`
    unless the usage shows it created no job."""
    assert chunk.idempotency_key is not None
    sent_at = None
    if chunk.sending_at is None:
        state.sending_job(chunk.chunk_no)  # written ahead: a lost answer is known on resume
    else:  # a replay (resumed within the window): the window counts from the first send
        sent_at = api.clock() - post_age(chunk, state.now())
    try:
        # checked: the plan made each request from columns held to every limit of the spec's
        # stricter request model (normalize), so the 10,000 rows are not parsed again here.
        submission = api.submit_job_body(
            kind,
            state.chunk_body(chunk.chunk_no),
            idempotency_key=chunk.idempotency_key,
            checked=True,
            replay_window=window,
            sent_at=sent_at,
            possible_credits=chunk.rows,
        )
    except OutcomeUnknown as lost:  # replays stopped at the window: the usage judges it
        return lost_post(api, state, chunk, kind=kind, emit=emit, window=window, again=again,
                         lost=lost)  # fmt: skip
    except ApiError:  # answered with a refusal: no job was created
        state.not_sent(chunk.chunk_no)
        raise
    job = submission.job
    taken = state.batch_taken(submission.batch_id, chunk.chunk_no)
    if taken is not None:  # another job's id: its polls and file are not this chunk's answer
        why = (
            f"chunk {chunk.chunk_no}: the service answered its POST with job"
            f" {submission.batch_id}, which this warehouse already holds for other places"
            f" ({taken}); not taken as this chunk's job (the service, or its key, is not the one"
            " that job came from); held as uncertain, not sent again blind"
        )
        state.uncertain(chunk.chunk_no, why, possible=chunk.rows)
        emit(Note(why))
        return Uncertain(chunk.chunk_no, why)
    due = None
    if job.status not in TERMINAL_JOB_STATUSES and job.eta_seconds is not None:
        due = api.clock() + job.eta_seconds
    if state.submitted(chunk.chunk_no, batch_id=submission.batch_id, rows=chunk.rows):
        emit(CreditsHeld(chunk.chunk_no, chunk.rows))
    emit(
        ChunkSubmitted(
            chunk.chunk_no, "job", chunk.rows, submission.batch_id, submission.replayed,
            None if due is None else job.eta_seconds,
        )
    )  # fmt: skip
    verb = "re-attached to" if submission.replayed else "submitted"
    emit(Note(f"chunk {chunk.chunk_no}: {verb} job {submission.batch_id} ({chunk.rows:,} rows)"))
    return SubmitInfo(
        chunk.chunk_no, submission.batch_id, chunk.rows, submission.replayed, due,
        job.created_at, job.eta_completion_at,
    )  # fmt: skip


def lost_post(
    api: PlaceApiClient,
    state: RunState,
    chunk: Chunk,
    *,
    kind: JobKind,
    emit: Emit,
    window: float,
    again: bool,
    lost: OutcomeUnknown,
) -> SubmitInfo | Uncertain:
    """A job POST whose answer was lost and that may not be replayed (past the window): where
    the key's usage shows it created no job (the key ours alone, nothing of the run in
    flight) it is sent once more as a new POST; otherwise held as uncertain, its rows counted
    as possible extra credits, never sent again unless `--resend-uncertain` says so."""
    moved = usage_unexplained(api, state)
    if moved == 0 and again:
        state.not_sent(chunk.chunk_no)
        emit(Note(f"chunk {chunk.chunk_no}: its POST got no answer; the usage shows it created"
                  " no job, so it is sent again"))  # fmt: skip
        fresh = replace(chunk, sending_at=None)
        return submit_job(api, state, fresh, kind=kind, emit=emit, window=window, again=False)
    reason = (
        "the usage cannot tell whether it created a job (another user of the key, a job in"
        " flight, or no figure)"
        if moved is None
        else f"the usage moved {moved:,} credit(s) more than the run's ledger explains"
    )
    cause = type(lost.__cause__).__name__ if lost.__cause__ else "no answer"
    why = (
        f"chunk {chunk.chunk_no}: its job POST got no answer ({cause}) and replaying it past"
        f" the idempotency window ({window:g} s) could create a second job; {reason}; held as"
        " uncertain, not sent again blind"
    )
    state.uncertain(chunk.chunk_no, why, possible=chunk.rows)
    emit(Note(why))
    return Uncertain(chunk.chunk_no, why)


def send_batch(
    api: PlaceApiClient,
    state: RunState,
    chunk: Chunk,
    *,
    kind: JobKind,
    workdir: Path,
    emit: Emit,
    resend: bool = False,
) -> Fetched | Uncertain:
    """Send one synchronous batch; its answers become the chunk's result file, or it is held
    as `Uncertain` (its answer lost after the request may have been billed: the account
    books what the usage shows it cost, and `possible_extra_credits` counts its rows)."""
    lost = chunk.status == "submitted"  # sent before, its answer never stored
    if lost and not resend and usage_unexplained(api, state) != 0:
        return _uncertain(state, chunk, emit, "a previous attempt's answer was lost")
    state.sending(chunk.chunk_no)
    pois = state.chunk_requests(chunk.chunk_no)
    counted = chunk.error_code == UNCERTAIN  # its rows already in possible_extra_credits
    extra = len(pois) if lost and resend and not counted else 0
    for attempt in range(3):
        try:
            # the fields the answer carried (a status of only unknown fields stays empty)
            if kind == "enrich":
                results = [_line(r) for r in api.enrich_batch(pois).results]
            else:
                results = [_line(api.validate(pois[0]))]
            break
        except OutcomeUnknown as exc:
            # Billed or not? Where the key is ours alone the usage tells; else hold it.
            if attempt == 2 or usage_unexplained(api, state) != 0:
                cause = type(exc.__cause__).__name__ if exc.__cause__ else "no answer"
                return _uncertain(state, chunk, emit, f"its answer was lost ({cause})")
    path = workdir / f"chunk-{chunk.chunk_no:05d}" / "sync.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in results).encode()
    data = gzip.compress(body, mtime=0)
    path.write_bytes(data)
    ref = results[0].get("request_id") or f"sync-{chunk.chunk_no}"
    state.answered(
        chunk.chunk_no,
        path=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        extra=extra,
    )
    emit(ChunkSubmitted(chunk.chunk_no, "sync", chunk.rows, None))
    return Fetched(chunk.chunk_no, path, str(ref), "sync", held=0, partial=False)


def _line(answer: BaseModel) -> dict[str, Any]:
    """A synchronous answer as a result line: the spec's fields it carried, as sent."""
    line: dict[str, Any] = answer.model_dump(mode="json", exclude_unset=True)
    return line


def _uncertain(state: RunState, chunk: Chunk, emit: Emit, what: str) -> Uncertain:
    why = (
        f"chunk {chunk.chunk_no}: a synchronous request without an Idempotency-Key may have"
        f" been billed: {what}; held as uncertain, not sent again blind"
    )
    state.uncertain(chunk.chunk_no, why, possible=chunk.rows)
    emit(Note(why))
    return Uncertain(chunk.chunk_no, why)
