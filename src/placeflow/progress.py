"""Live progress of a run in the terminal, from the run's own events (`placeflow.events`).

`Tally` keeps the real counts (rows read, rejected, duplicates, fresh, planned; jobs submitted;
rows processed as the service reports them, summed over jobs; files verified; rows loaded;
credits held, charged, released) and an ETA from the observed rate of processed rows; it is
plain Python, so a Prefect progress artifact (flows/) or a test reads the same numbers.
`ProgressDisplay` draws a tally with rich on a terminal (stderr): an event callback for
`placeflow.run(on_event=...)` and a context manager. Whether to show it at all is the
caller's decision (`wanted`): only on a TTY, never under --json, --quiet or CI.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from placeflow.api.text import printable
from placeflow.events import (
    ChunkSubmitted,
    CreditsCharged,
    CreditsHeld,
    Event,
    FileVerified,
    JobProgress,
    Note,
    RowsLoaded,
    StageFinished,
    StageStarted,
)

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

Clock = Callable[[], float]
PREPARE = {"read": "rows", "normalize": "rejected", "dedupe": "duplicates", "fresh": "fresh"}
"""Preparing stages and the count of their summary the tally keeps."""


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
            case ChunkSubmitted(chunk_no, route, rows, batch_id):
                self.submitted[chunk_no] = rows
                if route == "job" and batch_id:
                    self.jobs.add(batch_id)
                    self.totals.setdefault(batch_id, rows)
                else:
                    self.sync_rows[chunk_no] = rows
                self._observe()
            case JobProgress(batch_id, _, processed, total):
                self.jobs.add(batch_id)
                self.processed[batch_id] = max(processed, self.processed.get(batch_id, 0))
                if total:
                    self.totals[batch_id] = total
                self._observe()
            case FileVerified(chunk_no):
                self.verified.add(chunk_no)
            case RowsLoaded(chunk_no, rows, succeeded, failed):
                self.loaded[chunk_no] = (rows, succeeded, failed)
            case CreditsHeld(chunk_no, credits):
                self.held[chunk_no] = credits
            case CreditsCharged(chunk_no, charged, released):
                self.charged[chunk_no] = (charged, released)
            case Note(message):
                self.note = message

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
        """Seconds until the service has processed every row at the observed rate."""
        remaining = self.to_process - self.rows_processed
        if self.finished or (self._first is not None and remaining <= 0):
            return 0.0
        rate = self.rate()
        return remaining / rate if rate else None

    def fraction(self) -> float:
        """The share of the run done, 0 to 1: a tenth for preparing, then processed and loaded."""
        if self.finished:
            return 1.0
        total = self.to_process
        if not total:
            return 0.1 if "fresh" in self.prepared else 0.0
        processed = min(self.rows_processed, total) / total
        return 0.1 + 0.6 * processed + 0.3 * min(self.rows_loaded, total) / total


# --- drawing ------------------------------------------------------------------------------------


def _clock_text(seconds: float | None) -> str:
    return "--:--" if seconds is None else str(timedelta(seconds=int(seconds)))


def render(tally: Tally, title: str = "placeflow run") -> RenderableType:
    """The display: one line per count, bars for the counts that have a total."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(min_width=24)
    table.add_column()
    head = f"{title} · {tally.stage} · {_clock_text(tally.elapsed())} elapsed"
    table.add_row(head, "", "", f"ETA {_clock_text(tally.eta())}")
    p, total = tally.prepared, tally.to_process

    def bar(done: int, of: int) -> Any:
        return ProgressBar(total=max(of, 1), completed=min(done, of)) if of else ""

    for name, label in (("read", "rows"), ("normalize", "rejected"), ("dedupe", "duplicates")):
        table.add_row(label if name != "read" else "read", f"{p.get(name, 0):,}", "", "")
    table.add_row("fresh", f"{p.get('fresh', 0):,}", "", "not sent again")
    table.add_row("planned", f"{tally.planned:,}", "", f"places in {tally.chunks:,} chunks")
    chunks = max(tally.chunks, len(tally.submitted))
    sent = len(tally.submitted)
    table.add_row(
        "submitted", f"{sent:,} / {chunks:,}", bar(sent, chunks), f"{len(tally.jobs)} jobs"
    )
    done = tally.rows_processed
    table.add_row("processed", f"{done:,} / {total:,}", bar(done, total), "rows, service side")
    files = len(tally.verified)
    table.add_row("verified", f"{files:,} / {chunks:,}", bar(files, chunks), "result files")
    ok, failed = tally.loaded_split()
    loaded = tally.rows_loaded
    table.add_row(
        "loaded", f"{loaded:,} / {total:,}", bar(loaded, total), f"{ok:,} ok, {failed:,} failed"
    )
    table.add_row(
        "credits",
        f"{tally.credits_held:,} held",
        f"{tally.credits_charged:,} charged",
        f"{tally.credits_released:,} released",
    )
    if tally.note:  # text as it is: a note may quote a server or a file name ("[/x]", escapes)
        table.add_row("", "", "", Text(printable(tally.note[:100])))
    return table


class TextStream(Protocol):
    def write(self, s: str, /) -> int: ...
    def flush(self) -> None: ...
    def isatty(self) -> bool: ...


def wanted(stream: TextStream, *, quiet: bool, as_json: bool, ci: bool) -> bool:
    """Whether to draw: only on a terminal, and never for --quiet, --json or CI."""
    return not (quiet or as_json or ci) and stream.isatty()


class ProgressDisplay:
    """An event callback that draws the run's tally live on `stream` (stderr by default).

    `with ProgressDisplay() as show: placeflow.run(..., on_event=show)`; disabled, it only
    counts. The last frame stays on screen when it stops, above whatever is printed next.
    """

    __slots__ = ("_live", "_stream", "enabled", "tally", "title")

    def __init__(
        self,
        *,
        title: str = "placeflow run",
        stream: TextStream | None = None,
        enabled: bool = True,
        clock: Clock = time.monotonic,
    ) -> None:
        self.title = title
        self.tally = Tally(clock)
        self.enabled = enabled
        self._stream = stream
        self._live: Live | None = None

    def __call__(self, event: Event) -> None:
        self.tally(event)
        if self._live is not None:
            self._live.refresh()

    def start(self) -> None:
        if not self.enabled or self._live is not None:
            return
        import sys

        from rich.console import Console
        from rich.live import Live

        console = Console(file=self._stream or sys.stderr)  # type: ignore[arg-type]  # a TextIO
        self._live = Live(
            console=console,
            get_renderable=lambda: render(self.tally, self.title),
            refresh_per_second=2,
            redirect_stdout=False,  # stdout keeps the summary (and --json's one document)
            redirect_stderr=False,
        )
        self._live.start(refresh=True)

    def stop(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.refresh()
            live.stop()

    def __enter__(self) -> ProgressDisplay:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
