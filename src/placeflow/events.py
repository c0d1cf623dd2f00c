"""What a run reports as it goes: typed events for a progress display, a log or a test.

`placeflow.run(on_event=...)` calls the callback with each event, in the run's own thread.
Counts are real (read from the stages' summaries and the service's job statuses), never
estimated. The callback must not raise; it should be quick (a display, a queue).

`Tally` keeps a run's real counts from its events (rows read, rejected, duplicates, fresh,
planned; jobs submitted; rows processed as the service reports them, summed over jobs; files
verified; rows loaded; credits held, charged, released) and an ETA from the observed rate of
processed rows (before any row is seen processed, from the service's own etas): the
terminal's live display (`placeflow.cli.progress`) and a flow's progress artifact read the same
numbers. A note is news: it is shown for `NOTE_SECONDS`, and not once the run has ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StageStarted:
    """A stage begins (read, normalize, dedupe, fresh, plan, open, submit, poll, ...)."""

    stage: str


@dataclass(frozen=True)
class StageFinished:
    """A stage ended; `info` is its summary (ReadInfo, NormalizeInfo, ...), `counts` in short."""

    stage: str
    info: Any
    counts: dict[str, int]


@dataclass(frozen=True)
class ChunkSubmitted:
    """A chunk was sent: a bulk job accepted (or re-attached), or a synchronous batch answered;
    `eta_seconds`, the service's own eta for the job, when it gave one."""

    chunk_no: int
    route: str
    rows: int
    batch_id: str | None
    replayed: bool = False
    eta_seconds: float | None = None


@dataclass(frozen=True)
class JobProgress:
    """A job's status as polled: `processed` of `total` rows; `eta_seconds`, the service's
    own eta for it then, when it gave one."""

    batch_id: str
    status: str
    processed: int
    total: int
    eta_seconds: float | None = None


@dataclass(frozen=True)
class FileVerified:
    """A chunk's result file is on disk and matched its sha256 and size (its gzip stream, lines
    and ids are proved by the load that reads it); `lines` is the count the job reported."""

    chunk_no: int
    path: str
    sha256: str
    lines: int


@dataclass(frozen=True)
class RowsLoaded:
    """A chunk's outcomes are in the warehouse."""

    chunk_no: int
    rows: int
    succeeded: int
    failed: int


@dataclass(frozen=True)
class CreditsHeld:
    """The service holds credits for a submitted job (one per row)."""

    chunk_no: int
    credits: int


@dataclass(frozen=True)
class CreditsCharged:
    """A chunk settled: credits charged and the rest of its hold released."""

    chunk_no: int
    charged: int
    released: int


@dataclass(frozen=True)
class Note:
    """A line worth telling a person (re-attached, timed out, credits ran out, ...)."""

    message: str


@dataclass(frozen=True)
class RunStarted:
    """A run was opened (or resumed) and is about to spend: `kind` is run, refresh or research,
    `credits_estimated` the most it may cost (reserved against the budgets)."""

    run_id: str
    kind: str
    credits_estimated: int
    resumed: bool = False


@dataclass(frozen=True)
class BudgetThreshold:
    """A budget (`placeflow budget`) is spent past its warning share after this run's spending."""

    run_id: str
    per: str
    applies_to: str | None
    credits: int
    spent: int
    left: int
    warn_at: float
    period_end: str
    message: str


@dataclass(frozen=True)
class ClaimsWaiting:
    """The run waits, up to `seconds`, for places other runs are buying (`owners`: run ->
    places still to come)."""

    run_id: str
    owners: dict[str, int]
    seconds: float
    message: str


@dataclass(frozen=True)
class ClaimsEnded:
    """The wait for other runs' places ended: `left`, by run, still have no answer."""

    run_id: str
    left: dict[str, int]
    message: str


Event = (
    StageStarted
    | StageFinished
    | ChunkSubmitted
    | JobProgress
    | FileVerified
    | RowsLoaded
    | CreditsHeld
    | CreditsCharged
    | Note
    | RunStarted
    | BudgetThreshold
    | ClaimsWaiting
    | ClaimsEnded
)
Emit = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The default callback: events go nowhere."""


# --- a run's counts, from its events --------------------------------------------------------

Clock = Callable[[], float]
"""Monotonic seconds, injectable for tests."""
PREPARE = {"read": "rows", "normalize": "rejected", "dedupe": "duplicates", "fresh": "fresh"}
"""Preparing stages and the count of their summary the tally keeps."""
NOTE_SECONDS = 20.0
"""How long a note stays news (a later note replaces it sooner)."""
ENDED = frozenset({"completed", "failed", "cancelled"})
"""Job statuses that are the job's last."""


class Tally:
    """A run's counts so far, from its events; replayed events are counted once (by chunk/job)."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.started = clock()
        self.stage = "starting"
        self.prepared: dict[str, int] = {}
        self.planned = 0
        self.chunks = 0
        self.finished = False
        self.note = ""
        self.note_at = self.started
        self.status: dict[str, str] = {}  # batch_id -> its status as last reported
        self.due: dict[str, float] = {}  # batch_id -> when the service says it ends (clock)
        self.submitted: dict[int, int] = {}  # chunk_no -> rows
        self.jobs: set[str] = set()
        self.sync_rows: dict[int, int] = {}
        self.processed: dict[str, int] = {}  # batch_id -> rows processed, as polled
        self.totals: dict[str, int] = {}
        self.verified: set[int] = set()
        self.loaded: dict[int, tuple[int, int, int]] = {}  # chunk_no -> rows, ok, failed
        self.held: dict[int, int] = {}
        self.charged: dict[int, tuple[int, int]] = {}
        self._first: tuple[float, int] | None = None  # when work was first seen, and how much

    def __call__(self, event: Event) -> None:
        match event:
            case StageStarted(stage):
                self.stage = stage
            case StageFinished(stage, _, counts):
                if stage in PREPARE:
                    self.prepared[stage] = counts.get(PREPARE[stage], 0)
                elif stage == "plan":
                    self.planned, self.chunks = counts.get("places", 0), counts.get("chunks", 0)
                elif stage == "account":
                    self.finished, self.stage = True, "done"
            case ChunkSubmitted(chunk_no, route, rows, batch_id, _, eta):
                self.submitted[chunk_no] = rows
                if route == "job" and batch_id:
                    self.jobs.add(batch_id)
                    self.totals.setdefault(batch_id, rows)
                    self.status.setdefault(batch_id, "submitted")
                    self._expect(batch_id, eta)
                else:
                    self.sync_rows[chunk_no] = rows
                self._observe()
            case JobProgress(batch_id, status, processed, total, eta):
                self.jobs.add(batch_id)
                self.processed[batch_id] = max(processed, self.processed.get(batch_id, 0))
                if total:
                    self.totals[batch_id] = total
                self.status[batch_id] = status
                self._expect(batch_id, None if status in ENDED else eta)
                self._observe()
            case FileVerified(chunk_no):
                self.verified.add(chunk_no)
            case RowsLoaded(chunk_no, rows, succeeded, failed):
                self.loaded[chunk_no] = (rows, succeeded, failed)
            case CreditsHeld(chunk_no, credits):
                self.held[chunk_no] = credits
            case CreditsCharged(chunk_no, charged, released):
                self.charged[chunk_no] = (charged, released)
            case Note(message) | BudgetThreshold(message=message):
                self.note, self.note_at = message, self._clock()

    # --- what the counts say -------------------------------------------------------------------

    @property
    def to_process(self) -> int:
        """Rows to send: the plan's, or (a resumed run has no plan stage) what the jobs hold."""
        return max(self.planned, sum(self.totals.values()) + sum(self.sync_rows.values()))

    @property
    def rows_processed(self) -> int:
        """Rows the service has processed: jobs as last polled, synchronous batches answered."""
        return sum(self.processed.values()) + sum(self.sync_rows.values())

    @property
    def rows_loaded(self) -> int:
        return sum(r for r, _, _ in self.loaded.values())

    def loaded_split(self) -> tuple[int, int]:
        """Rows loaded as (succeeded, failed)."""
        values = self.loaded.values()
        return sum(s for _, s, _ in values), sum(f for _, _, f in values)

    @property
    def credits_held(self) -> int:
        return sum(self.held.values())

    @property
    def credits_charged(self) -> int:
        return sum(c for c, _ in self.charged.values())

    @property
    def credits_released(self) -> int:
        return sum(r for _, r in self.charged.values())

    def elapsed(self) -> float:
        return self._clock() - self.started

    def news(self) -> str:
        """The latest note while it is news: younger than NOTE_SECONDS, the run not ended."""
        if self.finished or self._clock() - self.note_at >= NOTE_SECONDS:
            return ""
        return self.note

    def in_flight(self) -> list[tuple[str, str, int, int]]:
        """The jobs not ended, as last reported: (batch_id, status, processed, total), in the
        order they were submitted."""
        return [
            (b, s, self.processed.get(b, 0), self.totals.get(b, 0))
            for b, s in self.status.items()
            if s not in ENDED
        ]

    def _expect(self, batch_id: str, eta: float | None) -> None:
        """The job's end as the service said it (its eta from now); forgotten once it ended."""
        if eta is None or eta < 0:
            self.due.pop(batch_id, None)
        else:
            self.due[batch_id] = self._clock() + eta

    def _observe(self) -> None:
        if self._first is None:
            self._first = (self._clock(), self.rows_processed)

    def rate(self) -> float | None:
        """Rows processed per second since work was first seen (None before any progress)."""
        if self._first is None:
            return None
        since, base = self._first
        seconds, rows = self._clock() - since, self.rows_processed - base
        return rows / seconds if seconds > 0 and rows > 0 else None

    def eta(self) -> float | None:
        """Seconds until the service has processed every row at the observed rate; before a
        rate is seen, as the service's own etas say (None when it gave none)."""
        remaining = self.to_process - self.rows_processed
        if self.finished or (self._first is not None and remaining <= 0):
            return 0.0
        rate = self.rate()
        return remaining / rate if rate else self.service_eta(remaining)

    def service_eta(self, remaining: int) -> float | None:
        """When the last job in flight ends, as the service said; stretched in proportion
        when rows not yet in any job remain (chunks still to submit)."""
        if not self.due:
            return None
        left = max(0.0, max(self.due.values()) - self._clock())
        in_jobs = sum(t - self.processed.get(b, 0) for b, t in self.totals.items() if b in self.due)
        if in_jobs > 0 and remaining > in_jobs:
            left *= remaining / in_jobs
        return left

    def fraction(self) -> float:
        """The share of the run done, 0 to 1: a tenth for preparing, then processed and loaded."""
        if self.finished:
            return 1.0
        total = self.to_process
        if not total:
            return 0.1 if "fresh" in self.prepared else 0.0
        processed = min(self.rows_processed, total) / total
        return 0.1 + 0.6 * processed + 0.3 * min(self.rows_loaded, total) / total
