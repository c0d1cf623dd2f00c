"""What a run learns of the service's etas and processing rates, so that polls fall due when a
job can have ended, whether or not the service's `eta_seconds` tells the truth.

A service's eta may be off by a steady factor (optimistic under load, or padded). The learner
keeps that factor, `f` (reported eta = f x true eta), as a weighted mean in log space over
every sample the run yields:

- a job that completed: its submission said it would end at ``eta_completion_at`` (c0), it was
  created at ``created_at`` and completed at ``completed_at`` (C), all three on the service's
  own clock, so a skew between the clocks cancels out: ``f = (c0 - created) / (C - created)``;
- two reports of one running job that made progress, `dt` apart on this machine's clock, whose
  predicted completions moved from c1 to c2: ``f = 1 - (c2 - c1) / dt`` (an honest eta keeps
  its completion still; an optimistic one pushes it later as time passes).

It also keeps each job's processing rate (rows per second between two reports), and the
fastest rate seen in the run: a job cannot have finished before its remaining rows at that
rate, whatever its eta says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from placeflow.api.models import JobStatus
from placeflow.api.retry import parse_timestamp

MIN_FACTOR = 0.05
MAX_FACTOR = 20.0


@dataclass
class EtaLearner:
    """The run's estimate of how wrong the service's etas are, and how fast jobs move."""

    log_sum: float = 0.0
    weight: float = 0.0
    samples: int = 0
    fastest_rate: float = 0.0
    """Rows per second: the fastest any job of the run was seen processing."""

    @property
    def factor(self) -> float:
        """Reported eta over true eta: 1 until learned, 3 for an eta three times too long."""
        return math.exp(self.log_sum / self.weight) if self.weight else 1.0

    @property
    def correction(self) -> float:
        """What a reported eta is multiplied by to get the true one (1 / `factor`)."""
        return 1.0 / self.factor

    @property
    def learned(self) -> bool:
        return self.samples > 0

    def observe_factor(self, factor: float, weight: float) -> None:
        """Take one sample of `factor`, weighted by the seconds it spans."""
        if not math.isfinite(factor) or weight <= 0:
            return
        factor = min(max(factor, MIN_FACTOR), MAX_FACTOR)
        self.log_sum += math.log(factor) * weight
        self.weight += weight
        self.samples += 1

    def observe_completion(self, *, created: float, predicted: float, completed: float) -> None:
        """A job created at `created` and predicted at submission to end at `predicted` ended
        at `completed` (all on the service's clock)."""
        took = completed - created
        said = predicted - created
        if took >= 1.0 and said > 0:
            self.observe_factor(said / took, took)

    def observe_progress(self, *, dt: float, moved_by: float) -> None:
        """Two reports `dt` seconds apart whose predicted completion moved by `moved_by`."""
        if dt >= 1.0:
            self.observe_factor(1.0 - moved_by / dt, dt)

    def observe_rate(self, rate: float) -> None:
        if math.isfinite(rate) and rate > 0:
            self.fastest_rate = max(self.fastest_rate, rate)

    def earliest_end(self, remaining_rows: int) -> float:
        """Seconds before which a job with `remaining_rows` cannot have ended (0 unknown)."""
        if self.fastest_rate <= 0 or remaining_rows <= 0:
            return 0.0
        return remaining_rows / self.fastest_rate


@dataclass
class JobTrack:
    """What a poller knows of one job: its latest report, and what it said before."""

    delay: float | None = None
    """The last wait planned between two polls."""
    processed: int | None = None
    last: JobStatus | None = None
    seen_at: float | None = None
    """This machine's clock at the latest report."""
    eta: float | None = None
    predicted: float | None = None
    """The latest report's predicted completion, on the service's clock when it gave one."""
    predicted_local: bool = False
    """`predicted` is on this machine's clock (the report had no eta_completion_at)."""
    moved_at: float | None = None
    """This machine's clock when the job's progress last moved (or it was first seen)."""
    rate: float | None = None
    created: float | None = None
    submitted_completion: float | None = None
    """eta_completion_at of the submission answer (service clock): the completion sample."""
    total: int | None = None
    polls: int = 0
    cancelled: bool = False
    processed_before: int | None = None
    """`processed` of the report before the latest: unchanged means the job did not move."""
    files_waits: int = 0
    """Reads of the job ended without its result file shown (`JobStatus.files_pending`)."""

    def observe(self, status: JobStatus, now: float, learner: EtaLearner) -> None:
        """Learn from a report: the job's rate, the service's eta factor, when it last moved."""
        processed = status.progress.processed if status.progress else 0
        self.processed_before = self.processed
        predicted, local = _predicted(status, now)
        if self.seen_at is not None and self.processed is not None and now > self.seen_at:
            dt = now - self.seen_at
            before = self.processed or 0
            if processed > before and status.status == "running":
                self.rate = (processed - before) / dt
                learner.observe_rate(self.rate)
                comparable = predicted is not None and self.predicted is not None
                if comparable and local == self.predicted_local:
                    assert predicted is not None and self.predicted is not None
                    learner.observe_progress(dt=dt, moved_by=predicted - self.predicted)
        if self.processed is None or processed > self.processed:
            self.moved_at = now
        if status.status == "completed" and (self.last is None or self.last.status != "completed"):
            completed = parse_timestamp(status.completed_at)  # once a job: it may be read again
            if None not in (completed, self.created, self.submitted_completion):
                assert completed is not None and self.created is not None
                assert self.submitted_completion is not None
                learner.observe_completion(
                    created=self.created,
                    predicted=self.submitted_completion,
                    completed=completed,
                )
        elif self.created is None:
            self._anchor_report(status)
        self.last = status
        self.processed = processed
        self.seen_at = now
        self.eta = status.eta_seconds
        self.predicted, self.predicted_local = predicted, local
        self.total = status.total_items
        self.polls += 1

    def _anchor_report(self, status: JobStatus) -> None:
        """Without a submission answer, the first report with a long enough eta anchors the
        completion sample: its service time is eta_completion_at minus eta_seconds (to 1 s)."""
        at = parse_timestamp(status.eta_completion_at)
        if at is not None and status.eta_seconds is not None and status.eta_seconds >= 5:
            self.created = at - status.eta_seconds
            self.submitted_completion = at


def _predicted(status: JobStatus, now: float) -> tuple[float | None, bool]:
    """A report's predicted completion: its eta_completion_at (service clock), else now plus
    its eta on this machine's clock (then flagged local)."""
    at = parse_timestamp(status.eta_completion_at)
    if at is not None:
        return at, False
    if status.eta_seconds is not None:
        return now + status.eta_seconds, True
    return None, False
