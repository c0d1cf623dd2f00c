"""Poll stage: follow every submitted job of the run with one poller, yielding each as it ends.

The jobs are those already submitted when it starts (a resumed run's) and those a sender hands
it through a `JobFeed` while it runs (`placeflow.runner.sender`). Polls are spaced by each job's
`eta_seconds` (a job submitted by this process is first looked at when its eta says it is done;
a resumed process polls each job once now). Jobs still running
when `timeout` runs out, or whose progress stands still for `stuck_after` seconds (stuck), are
cancelled with DELETE and settled with what they processed; a job that could not be cancelled
is left marked, to be deleted before running again. A job the service keeps answering 404 for
(`placeflow.api.poller.UNKNOWN_AFTER` times in a row) is held, never sent again unasked: it may
have been forgotten after it was billed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import JobTimedOut, NotFound
from placeflow.api.feed import JobFeed
from placeflow.api.jobref import PendingJob
from placeflow.api.models import JobStatus
from placeflow.api.poller import JobPoller
from placeflow.events import Emit, JobProgress, Note
from placeflow.state.runstate import RunState

POLL_FLOOR = 1.0
"""The shortest wait between two polls of one job, in seconds."""


class _Observed:
    """The client as the poller sees it: every status it reads is also reported as progress."""

    def __init__(self, api: PlaceApiClient, emit: Emit) -> None:
        self._api = api
        self._emit = emit

    def job_status(self, batch_id: str) -> JobStatus:
        status = self._api.job_status(batch_id)
        progress = status.progress
        self._emit(
            JobProgress(
                batch_id,
                str(status.status),
                progress.processed if progress else 0,
                status.total_items or 0,
                status.eta_seconds,
            )
        )
        return status

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)


def poll(
    api: PlaceApiClient,
    state: RunState,
    *,
    jobs: Sequence[PendingJob],
    feed: JobFeed | None = None,
    timeout: float,
    stuck_after: float | None = None,
    watch: float | None = None,
    emit: Emit,
) -> Iterator[JobStatus]:
    """Each job's terminal status as it ends (timed-out ones cancelled, then settled): `jobs`,
    and those `feed` brings until it closes. With `watch`, no more than that many seconds
    (POLL_FLOOR at least) pass without a poll: a live display sees the jobs' progress."""
    if not jobs and feed is None:
        return
    observed: Any = _Observed(api, emit)  # the poller needs only job_status, cancel_job, clock
    poller = JobPoller(
        observed, floor=POLL_FLOOR, timeout=timeout, stuck_after=stuck_after,
        watch=None if watch is None else max(watch, POLL_FLOOR),
    )  # fmt: skip
    yield from _followed(api, state, poller, jobs, feed, stuck_after, emit)
    for batch_id, answer in poller.unknown.items():
        unknown_job(state, batch_id, answer, emit)


def unknown_job(state: RunState, batch_id: str, answer: NotFound, emit: Emit) -> None:
    """A job the service says it does not know: its chunk held, nothing sent again for it."""
    why = (
        f"the service does not know job {batch_id} (it answered {answer.status_code or 404}):"
        " it may have forgotten it, or the key or service is not the one it was submitted to;"
        " nothing was loaded for it and nothing is sent again unasked. `placeflow resume"
        f" {state.run_id}` looks for it again (with the key that submitted it); with"
        " --resend-uncertain it sends its places again as a new job, accepting a possible"
        " double charge"
    )
    chunk_no = state.chunk_of(batch_id)
    state.unknown_job(chunk_no, why)
    emit(Note(f"chunk {chunk_no}: {why}"))


def _followed(
    api: PlaceApiClient,
    state: RunState,
    poller: JobPoller,
    jobs: Sequence[PendingJob],
    feed: JobFeed | None,
    stuck_after: float | None,
    emit: Emit,
) -> Iterator[JobStatus]:
    try:
        for status in poller.iter_follow(jobs, feed):
            if status.batch_id in poller.stuck:  # cancelled by the poller: marked, then settled
                why = (
                    f"stuck: its progress did not move for {stuck_after:g} s; cancelled by"
                    " placeflow, its processed rows loaded, the rest not answered"
                )
                state.stuck(state.chunk_of(status.batch_id), why)
                emit(Note(f"job {status.batch_id} {why}"))
            yield status
    except JobTimedOut as exc:
        for batch_id in exc.batch_ids:
            state.timed_out(
                state.chunk_of(batch_id),
                f"not finished after {exc.timeout:g} s; cancelled by placeflow",
            )
        for batch_id in exc.batch_ids:
            # Cancelled, its processed rows stay billed and downloadable; or it ended on its
            # own just before the DELETE. Either way: settle what it has.
            try:
                status = api.job_status(batch_id)
            except NotFound as answer:
                poller.unknown[batch_id] = answer
                continue
            if status.terminal:
                yield status
                continue
            state.note_error(
                state.chunk_of(batch_id),
                f"not finished after {exc.timeout:g} s and could not be cancelled:"
                f" DELETE /v1/jobs/{batch_id} before running again",
            )
            emit(Note(f"job {batch_id} timed out and could not be cancelled"))
