"""Jobs handed to a running poller: a sender puts each job as the service accepts it and closes
the feed when it has sent all; the poller takes them between its polls.

Waiting on the feed is how a poller that has nothing due yet waits while submissions are still
under way: it wakes when a job arrives or the feed closes, whichever comes first.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from placeflow.api.jobref import JobRef

_CLOSED = object()


class JobFeed:
    """A closable queue of jobs, safe to put into from one thread and take from another."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._open = True
        self.on_wait: Callable[[float | None], None] | None = None
        """Called by the taker before it blocks, with how long it may (None: until a job comes or
        the feed closes): a run loads what it fetched and lets go of its warehouse then."""

    def put(self, job: JobRef) -> None:
        self._queue.put(job)

    def close(self) -> None:
        """No more jobs will come (closing twice is harmless)."""
        self._queue.put(_CLOSED)

    @property
    def open(self) -> bool:
        """Whether more jobs may still come (as far as the taker has seen)."""
        return self._open

    def take(self, timeout: float | None) -> list[JobRef]:
        """The jobs that arrived, waiting up to `timeout` seconds (None: until one arrives or
        the feed closes) for the first; [] when none came. Once the close is taken, `open` is
        False and `take` returns at once."""
        if not self._open:
            return []
        taken: list[object] = []
        try:
            if timeout is not None and timeout <= 0:
                taken.append(self._queue.get_nowait())
            else:
                if self.on_wait is not None and self._queue.empty():
                    self.on_wait(timeout)
                taken.append(self._queue.get(timeout=timeout))
            while True:
                taken.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        if _CLOSED in taken:
            self._open = False
        return [cast("JobRef", job) for job in taken if job is not _CLOSED]
