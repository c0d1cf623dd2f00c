"""Live progress of a run in the terminal, from the run's own events (`placeflow.events`).

The counts are `placeflow.events.Tally`'s; `ProgressDisplay` draws a tally with rich on a
terminal (stderr): an event callback for `placeflow.run(on_event=...)` and a context manager.
Whether to show it at all is the caller's decision (`wanted`): only on a TTY, never under
--json, --quiet or CI.
"""

from __future__ import annotations

import time
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from placeflow.events import Clock, Event, Tally
from placeflow.text import printable

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

# --- drawing ------------------------------------------------------------------------------------


def _clock_text(seconds: float | None) -> str:
    return "--:--" if seconds is None else str(timedelta(seconds=int(seconds)))


def render(
    tally: Tally, title: str = "placeflow run", *, waiting: str = "starting"
) -> RenderableType:
    """The display: one line per count, bars for the counts that have a total; before the
    run's first event, what it is waiting for (`waiting`)."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(min_width=24)
    table.add_column()
    stage = waiting if tally.stage == "starting" else tally.stage
    head = f"{title} · {stage} · {_clock_text(tally.elapsed())} elapsed"
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

    __slots__ = ("_live", "_stream", "enabled", "tally", "title", "waiting")

    def __init__(
        self,
        *,
        title: str = "placeflow run",
        stream: TextStream | None = None,
        enabled: bool = True,
        clock: Clock = time.monotonic,
        waiting: str = "starting",
    ) -> None:
        self.title = title
        self.waiting = waiting
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
            get_renderable=lambda: render(self.tally, self.title, waiting=self.waiting),
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
