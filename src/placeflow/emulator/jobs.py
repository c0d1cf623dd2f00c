"""Bulk jobs as a state machine on the sandbox's clock.

queued -> running -> completed | failed, and queued/running -> cancelled on DELETE. Each key runs
at most `max_running_jobs` at once; each running job processes `rows_per_second` rows. Progress is
derived from the clock whenever it is looked at, so a job advances whether or not anyone polls,
and `eta_seconds` is computed from the same schedule, so it tells the truth.

A job's result file is rendered once. With a row rate, it is prepared in the background as soon
as the job is admitted, for the start the schedule foresees, so that it is ready when the job
completes (as a real service's is); a start that turns out otherwise (a cancellation, a stall
ahead of it) or settings changed meanwhile only mean it is rendered again, when first needed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from placeflow.api.models import TERMINAL_JOB_STATUSES
from placeflow.emulator.responses import iso
from placeflow.emulator.synth import SynthSettings, render_job_rows
from placeflow.fields import JobKind

Fate = Literal["normal", "fail", "stall", "fail_midway"]
GZIP_LEVEL = 1
"""Result files favour speed over size: the sandbox must not be what a benchmark measures."""
STALL_FRACTION = 0.5
"""A stalled job stops making progress once this share of its rows is processed; a job that
fails midway fails there."""
MIDWAY_ERROR = "job failed part way: the upstream data provider became unavailable"


@dataclass(frozen=True)
class ResultFile:
    body: bytes
    sha256: str
    rows: int
    billable: int
    succeeded: int
    failed: int


@dataclass(frozen=True)
class JobLines:
    """All of a job's result lines, with running counts of bytes, failed and billable rows."""

    stamp: str
    settings: SynthSettings
    body: bytes | None
    """None once let go (a file rendered ahead keeps only its compressed form)."""
    offsets: list[int]
    failed_upto: list[int]
    billable_upto: list[int]
    flags: bytes
    """Per row, 1 if billable."""

    @classmethod
    def render(
        cls, kind: JobKind, pois: list[dict[str, Any]], settings: SynthSettings, stamp: str
    ) -> JobLines:
        rows = render_job_rows(kind, pois, settings=settings, now=stamp)
        # The lines are ASCII (non-ASCII is \u-escaped), so characters count bytes.
        return cls(
            stamp,
            settings,
            ("\n".join(rows.lines) + "\n").encode("ascii") if rows.lines else b"",
            [0, *accumulate(len(line) + 1 for line in rows.lines)],
            [0, *accumulate(1 - ok for ok in rows.succeeded)],
            [0, *accumulate(rows.billable)],
            rows.billable,
        )

    def file(self, n: int) -> ResultFile:
        """The result file of the first `n` rows."""
        assert self.body is not None
        gz = gzip.compress(self.body[: self.offsets[n]], compresslevel=GZIP_LEVEL, mtime=0)
        failed = self.failed_upto[n]
        return ResultFile(
            gz, hashlib.sha256(gz).hexdigest(), n, self.billable_upto[n], n - failed, failed
        )


@dataclass(frozen=True)
class Prepared:
    lines: JobLines
    file: ResultFile


_RENDERER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-render")
"""Renders result files ahead, one at a time, for every sandbox of the process."""


def _prepare(
    kind: JobKind, pois: list[dict[str, Any]], settings: SynthSettings, stamp: str, rows: int
) -> Prepared:
    lines = JobLines.render(kind, pois, settings, stamp)
    # Waiting jobs hold only their compressed file: a file of other rows renders anew.
    return Prepared(replace(lines, body=None), lines.file(rows))


@dataclass
class Job:
    batch_id: str
    key: str
    kind: JobKind
    pois: list[dict[str, Any]]
    content_hash: str
    created_at: float
    fate: Fate = "normal"
    status: str = "queued"
    started_at: float | None = None
    completed_at: float | None = None
    processed: int = 0
    held: int = 0
    settled: bool = False
    error: str | None = None
    error_code: str | None = None
    result: ResultFile | None = None
    downloads: int = 0
    total_items: int = 0
    refuse_file: bool = False
    """The file origin refuses this job's result file (403) forever."""
    forgotten: bool = False
    """Its job endpoints answer 404 (`SandboxBackend.forget_job`)."""
    status_reads: int = 0
    """GET /v1/jobs/{batch_id} requests answered for it so far (`unseen_job_reads`)."""
    reads_ended: int = 0
    """Status reads answered since it ended (`results_late_reads`)."""
    parts: list[tuple[bytes, str]] | None = field(default=None, repr=False)
    """Its result file split into parts (`result_parts`), each with its sha256."""
    row_ids: list[str] = field(default_factory=list, repr=False)
    """Each row's identity, for the ledger of rows billed (see `CreditAccount.bill_rows`)."""
    places_file: Path | None = field(default=None, repr=False)
    """Where its places are kept (`emulator.keep`): read again when a sandbox started anew
    renders its file."""
    prepared_ahead: bool = False
    """Its result file was the one rendered in the background, ready before it was asked for."""
    _lines: JobLines | None = field(default=None, repr=False)
    _bill_flags: bytes = field(default=b"", repr=False)
    _ahead: tuple[str, SynthSettings, Future[Prepared]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.total_items = len(self.pois)

    @property
    def total(self) -> int:
        return self.total_items

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES

    def prepare(self, start: float, settings: SynthSettings) -> None:
        """Render the result file in the background for a job that starts at `start`."""
        stamp = iso(start)
        work = _RENDERER.submit(_prepare, self.kind, self.pois, settings, stamp, _rows_run(self))
        self._ahead = (stamp, settings, work)

    def forget_prepared(self) -> None:
        """Drop the file rendered ahead (not rendered yet: never rendered), once it cannot fit."""
        if self._ahead is not None:
            self._ahead[2].cancel()
            self._ahead = None

    def _prepared(self, settings: SynthSettings) -> Prepared | None:
        """The file rendered ahead (waiting for it if under way), if rendered as it is now due."""
        if self._ahead is None:
            return None
        stamp, with_settings, work = self._ahead
        if stamp != self._stamp() or with_settings != settings:
            return None
        return work.result()

    def _places(self) -> list[dict[str, Any]]:
        """Its places: in memory, or read again from where they are kept."""
        if not self.pois and self.places_file is not None and self.total_items:
            kept = json.loads(gzip.decompress(self.places_file.read_bytes()))
            self.pois, self.row_ids = kept["pois"], kept["row_ids"]
        return self.pois

    def _stamp(self) -> str:
        return iso(self.started_at if self.started_at is not None else self.created_at)

    def _rows(self, settings: SynthSettings, *, body: bool = False) -> JobLines:
        """All rows' result lines, built once (or taken from the file rendered ahead), with
        their text if `body`."""
        if self._lines is None or (body and self._lines.body is None):
            prepared = self._prepared(settings)
            if prepared is not None and not (body and prepared.lines.body is None):
                self._lines = prepared.lines
            else:
                self._lines = JobLines.render(self.kind, self._places(), settings, self._stamp())
            self._bill_flags = self._lines.flags
        return self._lines

    def billed_rows(self, settings: SynthSettings) -> list[str]:
        """The identities of the processed rows that are billed."""
        if not self._bill_flags and (self.pois or self.places_file is not None):
            self._rows(settings)
        flags = self._bill_flags[: self.processed]
        return [rid for rid, bill in zip(self.row_ids, flags, strict=False) if bill]

    def failed_before(self, n: int, settings: SynthSettings) -> int:
        """How many of the first `n` rows failed (for progress counts)."""
        return self._rows(settings).failed_upto[n]

    def render(self, settings: SynthSettings) -> ResultFile:
        """The result file of the processed rows (all of them unless cancelled early)."""
        if self.result is None or self.result.rows != self.processed:
            n = self.processed
            prepared = self._prepared(settings)
            if prepared is not None and prepared.file.rows == n:
                self._rows(settings)
                self.result, self.prepared_ahead = prepared.file, True
            else:
                self.result = self._rows(settings, body=True).file(n)
                self.prepared_ahead = False
            if self.terminal:  # the compressed file is all a finished job keeps
                self._lines, self._ahead = None, None
                self.pois = []
        return self.result


@dataclass
class JobScheduler:
    """The jobs of one key, advanced together because they share running slots."""

    rows_per_second: float | None
    max_running: int
    jobs: list[Job] = field(default_factory=list)
    freed_at: float = -math.inf
    """When a running slot last came free: a queued job starts no earlier."""

    def _rate_finish(self, job: Job) -> float:
        assert job.started_at is not None
        if self.rows_per_second is None:
            return job.started_at
        return job.started_at + _rows_run(job) / self.rows_per_second

    def _processed_at(self, job: Job, t: float) -> int:
        assert job.started_at is not None
        if self.rows_per_second is None:
            done = job.total
        else:
            done = min(job.total, math.floor((t - job.started_at) * self.rows_per_second))
        if job.fate in ("stall", "fail_midway"):
            done = min(done, math.floor(job.total * STALL_FRACTION))
        return max(0, done)

    def _start(self, job: Job, at: float) -> None:
        job.status = "running"
        job.started_at = at
        if job.fate == "fail":
            job.status = "failed"
            job.completed_at = at
            job.error = "job failed: the upstream data provider was unavailable; resubmit the job"
            job.error_code = "EXTERNAL_API_ERROR"

    def advance(self, now: float) -> list[Job]:
        """Move every job to `now`; returns the jobs that became terminal (to settle credits)."""
        ended: list[Job] = []
        while True:
            running = [j for j in self.jobs if j.status == "running"]
            for job in (j for j in self.jobs if j.status == "queued"):
                if len(running) >= self.max_running:
                    break
                self._start(job, max(job.created_at, self.freed_at))
                if job.status == "failed":
                    ended.append(job)
                    self.freed_at = max(self.freed_at, job.created_at)
                    continue
                running.append(job)
            finishing = [(self._rate_finish(j), j) for j in running if j.fate != "stall"]
            due = [(t, j) for t, j in finishing if t <= now]
            if not due:
                break
            t, job = min(due, key=lambda pair: pair[0])
            job.status = "completed"
            job.processed = _rows_run(job)
            if job.fate == "fail_midway":
                job.status = "failed"
                job.error, job.error_code = MIDWAY_ERROR, "EXTERNAL_API_ERROR"
            job.completed_at = t
            self.freed_at = t
            ended.append(job)
        for job in self.jobs:
            if job.status == "running":
                job.processed = self._processed_at(job, now)
        return ended

    def _queue_plan(self, now: float, rate: float) -> Iterator[tuple[Job, float, float]]:
        """Each queued job with its start and finish on the current schedule, in queue order."""
        slots = sorted(
            max(now, j.started_at + _rows_run(j) / rate)
            for j in self.jobs
            if j.status == "running" and j.started_at is not None
        )
        slots += [now] * (self.max_running - len(slots))
        for queued in (j for j in self.jobs if j.status == "queued"):
            start = slots.pop(0)
            finish = start + queued.total / rate
            yield queued, start, finish
            slots.append(finish)
            slots.sort()

    def eta(self, job: Job, now: float) -> float:
        """Seconds until `job` completes on the current schedule (stalls are not foreseen)."""
        if job.terminal:
            return 0.0
        if self.rows_per_second is None:
            return 0.0
        rate = self.rows_per_second
        for queued, _, finish in self._queue_plan(now, rate):
            if queued is job:
                return finish - now
        assert job.started_at is not None
        return max(0.0, job.started_at + job.total / rate - now)

    def start_of(self, job: Job, now: float) -> float | None:
        """When `job` starts (or started) on the current schedule; None if not foreseen."""
        if job.started_at is not None:
            return job.started_at
        if self.rows_per_second is None:
            return None
        for queued, start, _ in self._queue_plan(now, self.rows_per_second):
            if queued is job:
                return start
        return None

    def cancel(self, job: Job, now: float) -> bool:
        """Cancel a queued or running job; processed rows stay billed and downloadable."""
        if job.terminal:
            return False
        if job.status == "running":
            job.processed = self._processed_at(job, now)
        if job.status == "running":
            self.freed_at = now
        job.status = "cancelled"
        job.completed_at = now
        return True


def _rows_run(job: Job) -> int:
    """The rows a job processes before it ends: all, or half for one that fails midway."""
    if job.fate == "fail_midway":
        return math.floor(job.total * STALL_FRACTION)
    return job.total
