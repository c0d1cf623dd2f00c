"""Submitting beside the rest of a run: the job chunks are sent by a thread of their own while
the run's thread polls, fetches and loads the jobs already accepted, so the first result is
loaded while later chunks are still going out, and the local work of loading hides behind the
service's.

The sender works on a connection of its own (the run's `Writer` gives each thread its own, let
go while that thread waits): it writes only the rows of the chunks it sends, which DuckDB keeps
apart from the loads' transactions. The writer closes it only once the sender stopped
(`Writer.working`), however long its request under way takes after the run ended. It
hands each accepted job to the poller through a `JobFeed`, which it closes when it ends, however
it ends. An error in the sender (credits ran out, a refusal of the key, a full disk) ends the
sending; it is kept and raised again in the run's thread by `raise_error` once the jobs already
accepted are settled, as an error of the submit loop was when sending came before polling.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from types import TracebackType

from placeflow.api.feed import JobFeed
from placeflow.events import Emit, Event
from placeflow.state.runstate import RunState

STOP_WAIT = 5.0
"""Seconds a run that stops on an error (or Ctrl-C) waits for the sender's request under way
to be answered and recorded; one cut short is what the write-ahead state already survives."""

Send = Callable[[RunState, JobFeed, Callable[[], bool]], None]
"""`send(state, feed, stopping)`: send the chunks on `state`, put each accepted job in `feed`,
and return early when `stopping()` says the run is ending."""


class Sender:
    """`send` run in a thread beside the caller; a context manager that starts it and, on
    exit, asks it to stop (at its next chunk) and waits for it (up to `STOP_WAIT` s when the
    block ends in an error). With nothing to send (`send` None) there is no thread and no
    `feed`."""

    def __init__(self, state: RunState, send: Send | None) -> None:
        self.feed = JobFeed() if send is not None else None
        self.error: BaseException | None = None
        self._state = state
        self._send = send
        self._stop = threading.Event()
        context = contextvars.copy_context()  # a flow's run context goes with the thread
        self._thread = threading.Thread(
            target=context.run, args=(self._main,), name="placeflow-sender", daemon=True
        )

    def _main(self) -> None:
        assert self._send is not None and self.feed is not None
        try:
            db = self._state.db
            with db.working():  # its connection closed when it stops, not before
                own = RunState(db, self._state.run_id, clock=self._state.now)
                self._send(own, self.feed, self._stop.is_set)
        except BaseException as exc:  # kept for the run's thread to raise
            self.error = exc
        finally:
            self.feed.close()

    def __enter__(self) -> Sender:
        if self._send is not None:
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(None if exc is None else STOP_WAIT)

    def raise_error(self) -> None:
        """Raise what ended the sending early, if anything did (after `__exit__`)."""
        if self.error is not None:
            raise self.error


def locked(emit: Emit) -> Emit:
    """`emit` callable from two threads: one event at a time reaches the display."""
    lock = threading.Lock()

    def one_at_a_time(event: Event) -> None:
        with lock:
            emit(event)

    return one_at_a_time
