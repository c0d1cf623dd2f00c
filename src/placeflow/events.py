"""What a run reports as it goes: typed events for a progress display, a log or a test.

`placeflow.run(on_event=...)` calls the callback with each event, in the run's own thread.
Counts are real (read from the stages' summaries and the service's job statuses), never
estimated. The callback must not raise; it should be quick (a display, a queue).
"""

from __future__ import annotations

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
    """A chunk was sent: a bulk job accepted (or re-attached), or a synchronous batch answered."""

    chunk_no: int
    route: str
    rows: int
    batch_id: str | None
    replayed: bool = False


@dataclass(frozen=True)
class JobProgress:
    """A job's status as polled: `processed` of `total` rows."""

    batch_id: str
    status: str
    processed: int
    total: int


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
)
Emit = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The default callback: events go nowhere."""
