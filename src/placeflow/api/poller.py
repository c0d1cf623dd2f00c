"""Following many bulk jobs at once, polling each when it can have ended, and no sooner.

Polls are requests like any other and count against the key's rate limit, so the poller waits
well. One loop for all jobs keeps a heap of next-due times. A job's next poll is its
``eta_seconds`` corrected by what the run has learned of the service's etas (`EtaLearner`: a
service whose etas run three times too short or too long is found out from the first job that
moves or ends, and every waiting job is rescheduled at once), combined with the job's own
observed processing rate, and never before its remaining rows could have been processed at the
fastest rate seen. A job whose eta has run out but has not ended backs off; a running job whose
progress stops moving for `stuck_after` seconds is *stuck*: it is cancelled (its processed rows
stay billed and downloadable) and its final status yielded like any other, the batch_id kept in
`stuck`. It only ever GETs the job (never re-POSTs), and when the overall timeout runs out it
cancels what is left with DELETE and says so in `JobTimedOut`.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import ApiError, JobFailed, JobTimedOut, NotFound, TransientError
from placeflow.api.eta import EtaLearner, JobTrack
from placeflow.api.feed import JobFeed
from placeflow.api.jobref import JobRef, anchor, job_ref
from placeflow.api.models import JobStatus
from placeflow.errors import OptionsError
from placeflow.support.text import printable_logger

log = printable_logger("placeflow.api.poller")

PROBE_AFTER = 60.0
"""Until the run has learned how true the service's etas are, a job whose eta is at least this
long is first looked at after a quarter of it: one poll that finds out a padded eta early. One
such probe at a time: its answer is the run's, so a hundred jobs queued behind each other (long
etas, all true) cost one early poll, not a hundred."""


FILES_AFTER = 6
"""Reads of a job that ended with rows processed but no result file shown, polled again backing
off from the floor to the ceiling (2 + 4 + 8 + 16 + 32 + 60 s by default, about two minutes),
before its status is handed on as it is: the files may follow the status (when is not shown:
docs/spec-readings.md, 20)."""
UNKNOWN_AFTER = 3
"""404s in a row after which a job is taken as unknown to the service (what the service answers
for an unknown batch_id is not shown: docs/spec-readings.md, 18). Fewer are polled again, backing
off as after a failed poll: a service may not show a job it has just accepted on every read."""


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    batch_id: str = field(compare=False)


class JobPoller:
    """Polls jobs until they end, each when it can have ended.

    `floor` and `ceiling` bound the wait between two polls of one job (the ceiling only a wait
    that backs off: no eta, one run out, no progress; a wait the eta, as learned, asks for is
    not cut, since polling a job queued behind others before its eta only spends requests);
    `jitter` adds up to that fraction of it (never more than `max_jitter` seconds) at random so
    that many jobs do not poll in step; `timeout` bounds the whole `follow` call; a running job
    whose progress does not move for `stuck_after` seconds (None: never) is stuck and, with
    `cancel_stuck`, cancelled. `learner` carries what was learned of the service's etas from one
    poller to the next (pass the same one for every poller of a run). With `watch`, no more
    than that many seconds pass without a poll while jobs are followed: the job due next is
    polled early (one request per `watch` seconds at most, whatever the number of jobs), so
    that a live display shows the service's own progress within a job. Clock, sleep and
    randomness default to the client's.
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
        stuck_after: float | None = 600.0,
        cancel_stuck: bool = True,
        learner: EtaLearner | None = None,
        watch: float | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        rand: Callable[[], float] | None = None,
    ) -> None:
        if not 0 < floor <= ceiling:
            raise OptionsError("need 0 < floor <= ceiling")
        if not 0 <= jitter <= 1:
            raise OptionsError("jitter is a fraction between 0 and 1")
        if max_jitter < 0:
            raise OptionsError("max_jitter must not be negative")
        if timeout <= 0:
            raise OptionsError("timeout must be positive")
        if stuck_after is not None and stuck_after <= 0:
            raise OptionsError("stuck_after must be positive (or None: never)")
        if watch is not None and watch < floor:
            raise OptionsError("watch must be at least the floor (or None: never)")
        self.client = client
        self.floor = floor
        self.ceiling = ceiling
        self.jitter = jitter
        self.max_jitter = max_jitter
        self.timeout = timeout
        self.cancel_on_timeout = cancel_on_timeout
        self.stuck_after = stuck_after
        self.cancel_stuck = cancel_stuck
        self.learner = learner or EtaLearner()
        self.watch = watch
        self._clock = clock or client.clock
        self._sleep = sleep or client.pause
        self._rand = rand or random.Random().random  # noqa: S311 - jitter, not secrets; own state
        self.polls = 0
        """GET /v1/jobs/{batch_id} requests made by this poller (DELETEs not included)."""
        self.polls_by_job: Counter[str] = Counter()
        self.stuck: dict[str, JobStatus] = {}
        """Jobs found stuck (progress stopped moving), by batch_id: their last status then."""
        self.unknown: dict[str, NotFound] = {}
        """Jobs the service answered 404 for `UNKNOWN_AFTER` times in a row, by batch_id: no
        longer followed (the last 404 kept). It may have forgotten them, or the key or the
        service is not the one they were submitted to."""
        self._not_found: Counter[str] = Counter()

    def next_delay(
        self, *, eta: float | None, previous: float | None, stalled: bool = False
    ) -> float:
        """Seconds until the next poll of a job whose latest eta is `eta`, as far as the eta
        tells (`plan` adds what the run has learned).

        Without an eta the previous wait doubles; a running job that made no progress since the
        last poll (`stalled`) also waits at least twice as long as last time.
        """
        base = float(eta) if eta is not None and eta >= 0 else (previous or 0.0) * 2
        if stalled and previous is not None:
            base = max(base, previous * 2)
        return self._bounded(base)

    def _bounded(self, base: float, *, capped: bool = True) -> float:
        """`base` raised to the floor, jittered, and (`capped`) cut to the ceiling."""
        top = self.ceiling if capped else math.inf
        delay = min(max(base, self.floor), top)
        spread = min(delay * self.jitter, self.max_jitter)
        return min(top, delay + spread * self._rand())

    def iter_follow(
        self, jobs: Iterable[JobRef], feed: JobFeed | None = None
    ) -> Iterator[JobStatus]:
        """Yield each job's terminal status as it ends, in the order they end.

        `feed` brings jobs submitted while this runs: taken between polls, each given its own
        `timeout` from when it arrived; while the feed is open, a wait for the next poll is a
        wait on the feed. A stuck job is cancelled and its final (cancelled) status yielded; it
        is named in `stuck`. A job the service answers 404 for `UNKNOWN_AFTER` times in a row is
        dropped, named in `unknown`, and the others followed on. Raises `JobTimedOut` (carrying
        the statuses that did end) when `timeout` runs out.
        """
        heap: list[_Due] = []
        tracks: dict[str, JobTrack] = {}
        deadlines: dict[str, float] = {}
        finished: dict[str, JobStatus] = {}
        seq = 0
        probing: str | None = None  # one probe at a time: a job's poll teaches all

        def admit(refs: Iterable[JobRef]) -> None:
            nonlocal seq, probing
            now = self._clock()
            for ref in refs:
                batch_id, eta = job_ref(ref)
                if batch_id in tracks:
                    continue
                track = tracks[batch_id] = JobTrack(seen_at=now, moved_at=now)
                deadline = deadlines[batch_id] = now + self.timeout
                anchor(track, ref)
                first = now
                if eta is not None and eta > 0:  # an eta already past: poll at once
                    base = eta * self.learner.correction
                    if not self.learner.learned and eta >= PROBE_AFTER and probing is None:
                        base, probing = eta / 4, batch_id
                    track.delay = self._bounded(base, capped=False)
                    first += track.delay
                seq += 1
                heapq.heappush(heap, _Due(min(first, deadline), seq, batch_id))

        admit(jobs)
        timed_out: list[str] = []
        asked = self._clock()  # when the service was last asked (`watch` counts from it)

        def next_at(due: _Due) -> float:
            """When the job due next is polled: when due, or early to watch it."""
            return due.at if self.watch is None else min(due.at, asked + self.watch)

        while heap or (feed is not None and feed.open):
            if feed is not None and feed.open:
                wait = None if not heap else max(0.0, next_at(heap[0]) - self._clock())
                arrived = feed.take(wait)
                if arrived or not heap:
                    admit(arrived)
                    continue
            due = heapq.heappop(heap)
            deadline = deadlines[due.batch_id]
            wait = next_at(due) - self._clock()
            if wait > 0:
                self._sleep(wait)
            track = tracks[due.batch_id]
            learned = (self.learner.samples, self.learner.fastest_rate)
            status = self._poll(due.batch_id, track)
            asked = self._clock()
            probing = None if probing == due.batch_id else probing
            if due.batch_id in self.unknown:
                continue
            if status is not None and status.terminal:
                now = self._clock()
                if status.files_pending and track.files_waits < FILES_AFTER and now < deadline:
                    track.files_waits += 1
                    track.delay = self._bounded(self.floor * 2 ** (track.files_waits - 1))
                    seq += 1
                    heapq.heappush(heap, _Due(min(now + track.delay, deadline), seq, due.batch_id))
                    continue
                finished[due.batch_id] = status
                if (self.learner.samples, self.learner.fastest_rate) != learned:
                    heap = self._rescheduled(heap, tracks, self._clock(), deadlines)
                yield status
                continue
            now = self._clock()
            if status is not None and self._is_stuck(track, status, now):
                self.stuck[due.batch_id] = status
                if self.cancel_stuck and self._cancel(due.batch_id):
                    track.cancelled = True
                    seq += 1
                    heapq.heappush(heap, _Due(now, seq, due.batch_id))  # its final status
                else:
                    timed_out.append(due.batch_id)
                continue
            if now >= deadline:
                timed_out.append(due.batch_id)
                continue
            track.delay = self.plan(track, status)
            seq += 1
            heapq.heappush(heap, _Due(min(now + track.delay, deadline), seq, due.batch_id))
            if (self.learner.samples, self.learner.fastest_rate) != learned:
                heap = self._rescheduled(heap, tracks, now, deadlines)
        if timed_out:
            raise self._give_up(timed_out, tracks, finished)

    def follow(self, jobs: Iterable[JobRef]) -> dict[str, JobStatus]:
        """The terminal status of every job the service knows, by batch_id (the others are in
        `unknown`). Raises `JobTimedOut` on timeout."""
        return {status.batch_id: status for status in self.iter_follow(jobs)}

    def wait(self, job: JobRef) -> JobStatus:
        """Follow one job; its status if it completed or was cancelled, `JobFailed` if it failed,
        the service's `NotFound` if it does not know the job."""
        ended = self.follow([job])
        if not ended:
            raise self.unknown[job_ref(job)[0]]
        status = next(iter(ended.values()))
        if status.status == "failed":
            raise JobFailed(status)
        return status

    # --- the schedule ----------------------------------------------------------------------

    def plan(self, track: JobTrack, status: JobStatus | None) -> float:
        """Seconds until the next poll of a job after its latest report (`status`, None when
        the poll failed): its eta as corrected by the run, its own rate, never before it can
        have ended, backing off when its eta ran out or its progress did not move."""
        previous = track.delay
        if status is None:
            return self.next_delay(eta=None, previous=previous)
        eta = status.eta_seconds
        processed = status.progress.processed if status.progress else 0
        remaining = max(0, status.total_items - processed)
        backing_off = eta is None or eta <= 0
        if backing_off:
            # The service thinks it is done (or will not say) and it is not: back off.
            base = (previous or self.floor) * 2
        else:
            assert eta is not None
            base = eta * self.learner.correction
            if track.rate and status.status == "running" and remaining:
                base = math.sqrt(base * remaining / track.rate)
        base = max(base, self.learner.earliest_end(remaining))
        stalled = status.status == "running" and track.processed_before == processed
        if stalled and previous is not None:
            base = max(base, previous * 2)
        return self._bounded(base, capped=backing_off or stalled)

    def _rescheduled(
        self, heap: list[_Due], tracks: dict[str, JobTrack], now: float, deadlines: dict[str, float]
    ) -> list[_Due]:
        """Every waiting job's next poll planned again with what the run just learned."""
        out: list[_Due] = []
        for due in heap:
            track = tracks[due.batch_id]
            if track.cancelled or track.seen_at is None:
                out.append(due)
                continue
            last = track.last
            if last is None:  # not polled yet: its first eta, corrected
                eta = track.eta
                if eta is None or eta <= 0:
                    out.append(due)
                    continue
                delay = self._bounded(eta * self.learner.correction, capped=False)
            else:
                delay = self.plan(track, last)
            at = min(max(now, track.seen_at + delay), deadlines[due.batch_id])
            out.append(_Due(at, due.seq, due.batch_id))
        heapq.heapify(out)
        return out

    def _is_stuck(self, track: JobTrack, status: JobStatus, now: float) -> bool:
        if self.stuck_after is None or track.cancelled or status.status != "running":
            return False
        processed = status.progress.processed if status.progress else 0
        if processed >= status.total_items or track.moved_at is None:
            return False
        return now - track.moved_at >= self.stuck_after

    # --- internals -----------------------------------------------------------------------

    def _poll(self, batch_id: str, track: JobTrack) -> JobStatus | None:
        self.polls += 1
        self.polls_by_job[batch_id] += 1
        try:
            status = self.client.job_status(batch_id)
        except TransientError as exc:
            # The client already retried; try again at the next due time instead of giving up.
            log.warning("poll of job %s failed (%s); polling again later", batch_id, exc)
            return None
        except NotFound as exc:
            self._not_found[batch_id] += 1
            if self._not_found[batch_id] >= UNKNOWN_AFTER:
                log.warning("job %s: unknown to the service (%s); no longer polled", batch_id, exc)
                self.unknown[batch_id] = exc
            return None
        self._not_found.pop(batch_id, None)
        track.observe(status, self._clock(), self.learner)
        return status

    def _cancel(self, batch_id: str) -> bool:
        try:
            outcome = self.client.cancel_job(batch_id)
        except (TransientError, ApiError) as exc:
            log.error("could not cancel stuck job %s: %s", batch_id, exc)
            return False
        log.warning("job %s: progress stopped moving; cancelled (%s)", batch_id, outcome.status)
        return True

    def _give_up(
        self, batch_ids: list[str], tracks: dict[str, JobTrack], finished: dict[str, JobStatus]
    ) -> JobTimedOut:
        not_cancelled: list[str] = []
        for batch_id in batch_ids:
            if not self.cancel_on_timeout or batch_id in self.stuck:
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
