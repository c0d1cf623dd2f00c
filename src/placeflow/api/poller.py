"""Following many bulk jobs at once, polling each when its own eta says it should be done.

Polls are requests like any other and count against the key's rate limit, so the poller waits
well: one loop for all jobs keeps a heap of next-due times; each job's next poll is its
``eta_seconds`` (clamped to a floor and a ceiling) plus jitter, backing off while a job makes no
progress. It only ever GETs the job (never re-POSTs), and when the overall timeout runs out it
cancels what is left with DELETE and says so in `JobTimedOut`.
"""

from __future__ import annotations

import heapq
import logging
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from placeflow.api.client import JobSubmission, PlaceApiClient
from placeflow.api.errors import ApiError, JobFailed, JobTimedOut, TransientError
from placeflow.api.models import TERMINAL_JOB_STATUSES, JobStatus, JobSubmitResponse

log = logging.getLogger("placeflow.api.poller")


@dataclass(frozen=True)
class PendingJob:
    """A job submitted earlier: its batch_id and the seconds from now until it should be done."""

    batch_id: str
    eta_seconds: float | None = None


JobRef = str | PendingJob | JobSubmission | JobSubmitResponse
"""A job to follow: its batch_id, or what is known of its eta (which schedules the first poll)."""


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    batch_id: str = field(compare=False)


@dataclass
class _Track:
    delay: float | None = None
    processed: int | None = None
    last: JobStatus | None = None


class JobPoller:
    """Polls jobs until they end, spacing polls by each job's eta.

    `floor` and `ceiling` bound the wait between two polls of one job; `jitter` adds up to that
    fraction of it (never more than `max_jitter` seconds) at random so that many jobs do not
    poll in step, while a job is never looked at much later than its eta says it ends;
    `timeout` bounds the whole `follow` call. Clock, sleep and randomness default to the
    client's.
    """

    def __init__(
        self,
        client: PlaceApiClient,
        *,
        floor: float = 2.0,
        ceiling: float = 60.0,
        jitter: float = 0.2,
        max_jitter: float = 0.5,
        timeout: float = 3600.0,
        cancel_on_timeout: bool = True,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        rand: Callable[[], float] | None = None,
    ) -> None:
        if not 0 < floor <= ceiling:
            raise ValueError("need 0 < floor <= ceiling")
        if not 0 <= jitter <= 1:
            raise ValueError("jitter is a fraction between 0 and 1")
        if max_jitter < 0:
            raise ValueError("max_jitter must not be negative")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.client = client
        self.floor = floor
        self.ceiling = ceiling
        self.jitter = jitter
        self.max_jitter = max_jitter
        self.timeout = timeout
        self.cancel_on_timeout = cancel_on_timeout
        self._clock = clock or client.clock
        self._sleep = sleep or client.sleep
        self._rand = rand or random.random
        self.polls = 0
        """GET /v1/jobs/{batch_id} requests made by this poller (DELETEs not included)."""

    def next_delay(
        self, *, eta: float | None, previous: float | None, stalled: bool = False
    ) -> float:
        """Seconds until the next poll of a job whose latest eta is `eta`.

        Without an eta the previous wait doubles; a running job that made no progress since the
        last poll (`stalled`) also waits at least twice as long as last time.
        """
        base = float(eta) if eta is not None and eta >= 0 else (previous or 0.0) * 2
        if stalled and previous is not None:
            base = max(base, previous * 2)
        delay = min(max(base, self.floor), self.ceiling)
        spread = min(delay * self.jitter, self.max_jitter)
        return min(self.ceiling, delay + spread * self._rand())

    def iter_follow(self, jobs: Iterable[JobRef]) -> Iterator[JobStatus]:
        """Yield each job's terminal status as it ends, in the order they end.

        Raises `JobTimedOut` (carrying the statuses that did end) when `timeout` runs out.
        """
        now = self._clock()
        deadline = now + self.timeout
        heap: list[_Due] = []
        tracks: dict[str, _Track] = {}
        finished: dict[str, JobStatus] = {}
        for seq, ref in enumerate(jobs):
            batch_id, eta = _ref(ref)
            if batch_id in tracks:
                continue
            track = tracks[batch_id] = _Track()
            first = now
            if eta is not None and eta > 0:  # an eta already past: poll at once
                track.delay = self.next_delay(eta=eta, previous=None)
                first += track.delay
            heapq.heappush(heap, _Due(min(first, deadline), seq, batch_id))
        seq = len(tracks)
        timed_out: list[str] = []
        while heap:
            due = heapq.heappop(heap)
            wait = due.at - self._clock()
            if wait > 0:
                self._sleep(wait)
            track = tracks[due.batch_id]
            status = self._poll(due.batch_id, track)
            if status is not None and status.terminal:
                finished[due.batch_id] = status
                yield status
                continue
            if self._clock() >= deadline:
                timed_out.append(due.batch_id)
                continue
            processed = status.progress.processed if status and status.progress else None
            stalled = (
                status is not None
                and status.status == "running"
                and processed is not None
                and processed == track.processed
            )
            delay = self.next_delay(
                eta=status.eta_seconds if status else None, previous=track.delay, stalled=stalled
            )
            track.delay = delay
            track.processed = processed
            seq += 1
            heapq.heappush(heap, _Due(min(self._clock() + delay, deadline), seq, due.batch_id))
        if timed_out:
            raise self._give_up(timed_out, tracks, finished)

    def follow(self, jobs: Iterable[JobRef]) -> dict[str, JobStatus]:
        """The terminal status of every job, by batch_id. Raises `JobTimedOut` on timeout."""
        return {status.batch_id: status for status in self.iter_follow(jobs)}

    def wait(self, job: JobRef) -> JobStatus:
        """Follow one job; its status if it completed or was cancelled, `JobFailed` if it failed."""
        status = next(iter(self.follow([job]).values()))
        if status.status == "failed":
            raise JobFailed(status)
        return status

    # --- internals -----------------------------------------------------------------------

    def _poll(self, batch_id: str, track: _Track) -> JobStatus | None:
        self.polls += 1
        try:
            status = self.client.job_status(batch_id)
        except TransientError as exc:
            # The client already retried; try again at the next due time instead of giving up.
            log.warning("poll of job %s failed (%s); polling again later", batch_id, exc)
            return None
        track.last = status
        return status

    def _give_up(
        self, batch_ids: list[str], tracks: dict[str, _Track], finished: dict[str, JobStatus]
    ) -> JobTimedOut:
        not_cancelled: list[str] = []
        for batch_id in batch_ids:
            if not self.cancel_on_timeout:
                not_cancelled.append(batch_id)
                continue
            try:
                outcome = self.client.cancel_job(batch_id)
            except (TransientError, ApiError) as exc:
                log.error("could not cancel timed-out job %s: %s", batch_id, exc)
                not_cancelled.append(batch_id)
                continue
            if not outcome.accepted:
                log.warning("timed-out job %s was already %s", batch_id, outcome.status)
                not_cancelled.append(batch_id)
        return JobTimedOut(
            batch_ids,
            timeout=self.timeout,
            not_cancelled=not_cancelled,
            last_status={b: tracks[b].last for b in batch_ids},
            finished=finished,
        )


def _ref(ref: JobRef) -> tuple[str, float | None]:
    """A job's batch_id and, when it was just submitted and is not yet over, its eta."""
    if isinstance(ref, PendingJob):
        return ref.batch_id, ref.eta_seconds
    job = ref.job if isinstance(ref, JobSubmission) else ref
    if isinstance(job, JobSubmitResponse):
        return job.batch_id, None if job.status in TERMINAL_JOB_STATUSES else job.eta_seconds
    return job, None
