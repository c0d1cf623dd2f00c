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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from placeflow.api.client import JobSubmission, PlaceApiClient
from placeflow.api.errors import ApiError, OutcomeUnknown, PlaceflowError, UsageUnknown
from placeflow.api.jobref import PendingJob
from placeflow.api.models import TERMINAL_JOB_STATUSES
from placeflow.events import ChunkSubmitted, CreditsHeld, Emit, Note
from placeflow.fields import JobKind
from placeflow.pipeline import writeahead
from placeflow.pipeline.fetch import Fetched
from placeflow.pipeline.lostpost import Reading, judge, read_usage
from placeflow.pipeline.resend import post_age
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


ASKS = 3
"""Re-sends of a lost POST within the idempotency window, each after asking the usage, before
the chunk is held as uncertain."""


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

    A lost answer is replayed at once a few times by the client (`PromptRetry`); past those
    tries the usage is asked before each further re-send (`pipeline.lostpost.read_usage`).
    Within the idempotency `window` of the first attempt that may have reached the service (a
    resumed chunk's from its `sending_at`) the re-send is a replay under the same key; past
    it the POST is sent again only when the usage shows it created no job, else held as
    `Uncertain`. The job that answers after lost answers is judged original or new work
    (`pipeline.lostpost.judge`); new work after an attempt that created a job is booked as
    billed twice (`RunState.billed_twice`) and said."""
    assert chunk.idempotency_key is not None
    sent_at = None
    if chunk.sending_at is None:
        state.sending_job(chunk.chunk_no)  # written ahead: a lost answer is known on resume
    else:  # a replay (resumed within the window): the window counts from the first send
        sent_at = api.clock() - post_age(chunk, state.now())
    asked: Reading | None = None
    for asks in range(ASKS + 1):
        try:
            # checked: the plan made each request from columns held to every limit of the
            # spec's stricter request model (normalize): the 10,000 rows are not parsed again.
            submission = api.submit_job_body(
                kind,
                state.chunk_body(chunk.chunk_no),
                idempotency_key=chunk.idempotency_key,
                checked=True,
                replay_window=window,
                sent_at=sent_at,
                possible_credits=chunk.rows,
            )
        except OutcomeUnknown as lost:  # past the prompt tries: the usage is asked first
            state.lost_answers(chunk.chunk_no, lost.lost)
            sent_at = lost.first_sent if lost.first_sent is not None else sent_at
            asked = read_usage(api, state, chunk_no=chunk.chunk_no, urgent=True)
            created = asked.created_job(chunk.rows) if asked is not None else None
            past = sent_at is None or api.clock() - sent_at > window
            if past or asks == ASKS:
                return _past(api, state, chunk, kind=kind, emit=emit, window=window,
                             again=again, lost=lost, asked=asked, past=past)  # fmt: skip
            emit(Note(f"chunk {chunk.chunk_no}: its POST got no answer ({_cause(lost)}); the"
                      f" usage {_shows(asked, created)}: replayed under its key"))  # fmt: skip
            continue
        except ApiError:  # answered with a refusal: no job was created
            state.not_sent(chunk.chunk_no)
            raise
        break
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
    batch = submission.batch_id
    if state.submitted(chunk.chunk_no, batch_id=batch, rows=chunk.rows, lost=submission.lost):
        emit(CreditsHeld(chunk.chunk_no, chunk.rows))
    if submission.first_sent is not None:  # an attempt may have created a job: which is this?
        _judged(api, state, chunk, submission, asked, emit)
    emit(
        ChunkSubmitted(
            chunk.chunk_no, "job", chunk.rows, batch, submission.replayed,
            None if due is None else job.eta_seconds,
        )
    )  # fmt: skip
    verb = "re-attached to" if submission.replayed else "submitted"
    emit(Note(f"chunk {chunk.chunk_no}: {verb} job {batch} ({chunk.rows:,} rows)"))
    return SubmitInfo(
        chunk.chunk_no, batch, chunk.rows, submission.replayed, due,
        job.created_at, job.eta_completion_at,
    )  # fmt: skip


def _judged(
    api: PlaceApiClient,
    state: RunState,
    chunk: Chunk,
    submission: JobSubmission,
    asked: Reading | None,
    emit: Emit,
) -> None:
    """Book and say a job that answered after lost answers when it is new work billed twice."""
    judged = judge(api, state, chunk.chunk_no, submission, asked)
    if not (judged.new and judged.twice):
        return
    # Each attempt whose answer was lost may have made a job of its own (a service that keeps
    # keys shorter than the prompt replays' spacing makes one per attempt): that many at most.
    lost = max(1, state.lost_attempts(chunk.chunk_no))
    why = (
        f"chunk {chunk.chunk_no}: billed twice: job {submission.batch_id} is new work the"
        f" service created for a re-send of its POST ({judged.why}), after an earlier attempt"
        f" had created a job of the same {chunk.rows:,} places that the service no longer"
        f" replayed ({lost} attempt(s) under Idempotency-Key {chunk.idempotency_key} lost"
        " their answers, each may have made one); no batch_id but the answered job's came, and"
        " the spec lists no jobs, so the others cannot be fetched or cancelled: what the usage"
        f" shows they cost (at most {lost * chunk.rows:,} credits) is booked to this chunk"
    )
    state.billed_twice(chunk.chunk_no, ref=f"{submission.batch_id}:twice",
                       credits=lost * chunk.rows, why=why)  # fmt: skip
    emit(Note(why))


def _past(
    api: PlaceApiClient,
    state: RunState,
    chunk: Chunk,
    *,
    kind: JobKind,
    emit: Emit,
    window: float,
    again: bool,
    lost: OutcomeUnknown,
    asked: Reading | None,
    past: bool,
) -> SubmitInfo | Uncertain:
    """A lost POST that may not be replayed (past the window, or the usage asked too often):
    where the usage shows it created no job it is sent once more as a new POST; otherwise
    held as uncertain, its rows counted as possible extra credits, never sent again unless
    `--resend-uncertain` says so."""
    created = asked.created_job(chunk.rows) if asked is not None else None
    if created is False and again:
        state.not_sent(chunk.chunk_no)
        emit(Note(f"chunk {chunk.chunk_no}: its POST got no answer; the usage shows it created"
                  " no job, so it is sent again"))  # fmt: skip
        fresh = replace(chunk, sending_at=None)
        return submit_job(api, state, fresh, kind=kind, emit=emit, window=window, again=False)
    where = (
        f"replaying it past the idempotency window ({window:g} s) could create a second job"
        if past
        else f"it got no answer after {ASKS} re-sends"
    )
    why = (
        f"chunk {chunk.chunk_no}: its job POST got no answer ({_cause(lost)}) and {where}; the"
        f" usage {_shows(asked, created)}; held as uncertain, not sent again blind"
    )
    state.uncertain(chunk.chunk_no, why, possible=chunk.rows)
    emit(Note(why))
    return Uncertain(chunk.chunk_no, why)


def _cause(lost: OutcomeUnknown) -> str:
    return type(lost.__cause__).__name__ if lost.__cause__ else "no answer"


def _shows(asked: Reading | None, created: bool | None) -> str:
    """What the usage said of a lost POST, in words."""
    if asked is None:
        return "cannot tell whether it created a job (another user of the key, or no figure)"
    if created is None:
        return (
            f"holds {asked.unexplained:,} credit(s) beyond the run's ledger, which chunks held"
            " as uncertain or a billing difference may explain"
        )
    if created:
        return f"holds {asked.unexplained:,} credit(s) more than the run's ledger explains"
    return "shows it created no job"


@dataclass
class _Batch:
    """A synchronous batch as a kind of write-ahead request (`placeflow.pipeline.writeahead`):
    its moves are the chunk lifecycle's; one whose answer may have been billed is held
    uncertain (the account books what the usage shows it cost)."""

    api: PlaceApiClient
    state: RunState
    chunk: Chunk
    kind: JobKind
    emit: Emit
    why: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def no(self) -> int:
        return self.chunk.chunk_no

    @property
    def most(self) -> int:
        return self.chunk.rows

    @property
    def name(self) -> str:
        return f"chunk {self.no}"

    def left(self) -> int | None:
        return None  # the run's budgets were checked, and its estimate reserved, at its open

    def sending(self, left: int | None) -> None:
        self.state.sending(self.no)

    def call(self) -> list[dict[str, Any]]:
        pois = self.state.chunk_requests(self.no)
        # the fields the answer carried (a status of only unknown fields stays empty)
        if self.kind == "enrich":
            return [_line(r) for r in self.api.enrich_batch(pois).results]
        return [_line(self.api.validate(pois[0]))]

    def received(self, answer: list[dict[str, Any]]) -> None:
        self.results = answer  # written as the chunk's file by `send_batch`

    def refused(self, error: PlaceflowError) -> None:
        return None  # raised on: a refusal stops the run (credits ran out: resumable)

    def usage_unknown(self, error: UsageUnknown) -> None:
        return None  # held uncertain: the account books what the usage shows later

    def not_billed(self) -> None:
        return None  # sent again as it is

    def billed(self, credits: int) -> None:
        self.uncertain(f"the usage holds {credits:,} credit(s) its ledger does not explain")

    def uncertain(self, why: str) -> None:
        self.why = (
            f"chunk {self.no}: a synchronous request without an Idempotency-Key may have been"
            f" billed: its answer was lost ({why}); held as uncertain, not sent again blind"
        )
        self.state.uncertain(self.no, self.why, possible=self.chunk.rows)
        self.emit(Note(self.why))


SYNC_TRIES = 3
"""Sends of a synchronous batch whose answer was lost while the usage shows it was not billed."""


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
    """Send one synchronous batch written ahead (`placeflow.pipeline.writeahead.send`); its
    answers become the chunk's result file, or it is held as `Uncertain` (its answer lost
    after the request may have been billed: the account books what the usage shows it cost,
    and `possible_extra_credits` counts its rows). One found sent without its answer (a
    resume) is judged by the usage first, unless `resend` (--resend-uncertain) says so."""
    batch = _Batch(api, state, chunk, kind, emit)
    lost = chunk.status == "submitted"  # sent before, its answer never stored
    if lost and not resend and writeahead.judge(api, state, batch) != "not_billed":
        return Uncertain(chunk.chunk_no, batch.why)
    counted = chunk.error_code == UNCERTAIN  # its rows already in possible_extra_credits
    extra = chunk.rows if lost and resend and not counted else 0
    sent = writeahead.send(api, state, batch, tries=SYNC_TRIES)
    if sent == "not_billed":  # lost every time, never billed: held all the same
        batch.uncertain(f"lost {SYNC_TRIES} times")
    if sent != "answered":
        return Uncertain(chunk.chunk_no, batch.why)
    path = workdir / f"chunk-{chunk.chunk_no:05d}" / "sync.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    results = batch.results
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
