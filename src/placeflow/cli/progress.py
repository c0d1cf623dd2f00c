"""Live progress of a run in the terminal, from the run's own events (`placeflow.events`).

The counts are `placeflow.events.Tally`'s; `ProgressDisplay` draws a tally with rich on a
terminal (stderr): an event callback for `placeflow.run(on_event=...)` and a context manager.
The head says the stage the run is in as it is (per-chunk stages too: submitting, waiting for
the service's jobs, downloading, loading) or, before the run's first event, what it waits for;
under the processed rows, the jobs in flight with their rows as the service last reported them.
Whether to show it at all is the caller's decision (`wanted`): only on a TTY, never under
--json, --quiet or CI; a shown display asks the run to poll its jobs often enough to move
(`watch_every`). On Ctrl-C the CLI clears it (`clear`) before it says how to finish the run,
at rest (`at_rest`): never from inside one of the display's own writes, which the signal
handler, run by the main thread between two of its steps, may have stopped half way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from placeflow.events import Clock, Event, Tally
from placeflow.pipeline.stages import WORDS
from placeflow.support.text import printable

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

    from placeflow.fields import RateLimits

STAGE_WORDS = WORDS
"""How the head names a stage (the stage registry's words, `placeflow.pipeline.stages`)."""
REFRESH_PER_SECOND = 4
"""Frames a second drawn by the display's own thread, besides one per event."""
JOBS_SHOWN = 3
"""Jobs in flight drawn one a line under the processed rows (the first ones submitted)."""
WATCH_SHARE = 10
"""A shown display asks for a poll at least every WATCH_SHARE requests' worth of the key's
slowest pace: one request in ten of what the key's limits allow, at most."""


def watch_every(limits: RateLimits) -> float:
    """Seconds between two polls a live display asks for: WATCH_SHARE times the key's slowest
    pace (6 s for the paid tier's 100 a minute, 60 s for the free tier's 10)."""
    return WATCH_SHARE * max(seconds / count for count, seconds in limits.windows)


# --- drawing ------------------------------------------------------------------------------------


def _clock_text(seconds: float | None) -> str:
    return "--:--" if seconds is None else str(timedelta(seconds=int(seconds)))


def render(
    tally: Tally, title: str = "placeflow run", *, waiting: str = "starting"
) -> RenderableType:
    """The display: one line per count, bars for the counts that have a total; before the
    run's first event, what it is waiting for (`waiting`)."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(min_width=24)
    table.add_column()
    stage = waiting if tally.stage == "starting" else STAGE_WORDS.get(tally.stage, tally.stage)
    elapsed, eta = _clock_text(tally.elapsed()), _clock_text(tally.eta())
    head = Text(f"{title} · {stage} · {elapsed} elapsed · ETA {eta}", style="bold")
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
    flying = tally.in_flight()
    for batch_id, status, processed, rows in flying[:JOBS_SHOWN]:
        job = Text(printable(f"{batch_id[:24]}: {status}"))  # as the service named it
        table.add_row("", f"{processed:,} / {rows:,}", bar(processed, rows), job)
    if len(flying) > JOBS_SHOWN:
        table.add_row("", "", "", f"and {len(flying) - JOBS_SHOWN:,} more job(s) in flight")
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
    note = tally.news()
    if note:  # text as it is: a note may quote a server or a file name ("[/x]", escapes)
        table.add_row("", "", "", Text(printable(note[:100])))
    return Group(head, table)


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

    __slots__ = (
        "_after", "_echo", "_live", "_stream", "_writing", "enabled", "tally", "title", "waiting",
    )  # fmt: skip

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
        self._echo: _EchoControl | None = None
        self._writing = 0
        """How deep the main thread is in the display's own writes (see `at_rest`)."""
        self._after: Callable[[], None] | None = None
        """What `at_rest` left for the end of the main thread's write it came in."""

    def __call__(self, event: Event) -> None:
        with self._write():
            self.tally(event)
            live = self._live
            if live is not None:  # each count as it comes (the clock moves REFRESH_PER_SECOND)
                live.refresh()

    def say(self, line: str) -> None:
        """A line for the person: above the live display while it is drawn, else on its
        stream (stderr)."""
        import sys

        with self._write():
            live = self._live
            if live is not None:
                live.console.print(line, markup=False, highlight=False)
                return
            stream = self._stream or sys.stderr
            stream.write(line + "\n")
            stream.flush()

    def at_rest(self, act: Callable[[], None]) -> None:
        """`act()` now, or, when the main thread is inside one of the display's writes (a
        signal handler runs in the main thread between any two of its steps), as soon as that
        write ends. Rich keeps what a thread writes inside a frame in that thread's buffer until
        the frame ends, and a stream's write cannot be entered again from within: a Ctrl-C's
        `clear` made in the middle of a frame was never written (the display stayed on screen
        over the Ctrl-C line), or failed the write ("reentrant call") and the run with it."""
        if self._writing:
            self._after = act
            return
        act()

    @contextmanager
    def _write(self) -> Iterator[None]:
        """A write of the display: counted when the main thread makes it (see `at_rest`)."""
        if threading.current_thread() is not threading.main_thread():
            yield  # another thread's frame is its own: `clear` waits for it on rich's lock
            return
        self._writing += 1
        try:
            yield
        finally:
            self._writing -= 1
            if not self._writing and self._after is not None:
                act, self._after = self._after, None
                act()

    def start(self) -> None:
        with self._write():
            self._start()

    def _start(self) -> None:
        if not self.enabled or self._live is not None:
            return
        import sys

        from rich.console import Console
        from rich.live import Live

        stream = self._stream or sys.stderr
        self._echo = _EchoControl.off(stream)
        console = Console(file=stream)  # type: ignore[arg-type]  # a TextIO
        self._live = Live(
            console=console,
            get_renderable=lambda: render(self.tally, self.title, waiting=self.waiting),
            refresh_per_second=REFRESH_PER_SECOND,
            redirect_stdout=False,  # stdout keeps the summary (and --json's one document)
            redirect_stderr=False,
        )
        self._live.start(refresh=True)

    def stop(self) -> None:
        with self._write():
            live, self._live = self._live, None
            if live is not None:
                live.refresh()
                live.stop()
            self._echo_back()

    def clear(self) -> None:
        """Stop drawing and erase the display, so that what is printed next stays on screen
        (the Ctrl-C line: a live display would redraw over it). The terminal's echo of control
        characters stays off (a second Ctrl-C may follow) until `release`."""
        live, self._live = self._live, None
        if live is not None:
            live.transient = True  # its stop erases what it drew
            live.stop()

    def release(self) -> None:
        """The terminal as it was before the display started (its echo of control characters)."""
        self._echo_back()

    def _echo_back(self) -> None:
        echo, self._echo = self._echo, None
        if echo is not None:
            echo.restore()

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


class _EchoControl:
    """The terminal's echo of control characters (ECHOCTL) switched off while the display is
    drawn, and back on after: a Ctrl-C echoed as "^C" after a full-width line moves the cursor
    down a line, and the display, erased from where it thinks it is, would leave its top line
    above the Ctrl-C line."""

    def __init__(self, fd: int, saved: list[Any]) -> None:
        self._fd = fd
        self._saved = saved

    @classmethod
    def off(cls, stream: Any) -> _EchoControl | None:
        """Switched off on `stream`'s terminal; None when it is not one (or cannot be told)."""
        try:
            import termios

            fd = stream.fileno()
            saved = termios.tcgetattr(fd)
            quiet = list(saved)
            quiet[3] &= ~termios.ECHOCTL  # the local modes
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (ImportError, AttributeError, OSError, ValueError):
            return None  # not a terminal's descriptor (a test's stream, a pipe): nothing to do
        except termios.error:
            return None
        return cls(fd, saved)

    def restore(self) -> None:
        import termios

        try:
            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)
        except (termios.error, OSError):  # the terminal went away: nothing to restore
            return
