"""The writer's idle closer (`placeflow.store.writer.Writer`): one thread that lets go of the
holds whose put-off let-go came due."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

H = TypeVar("H", bound=Hashable)
"""A hold of the writer's (one thread's connection)."""


class IdleCloser(Generic[H]):
    """One thread that lets go of the holds whose put-off let-go came due (started at the first
    put-off, ended by `stop`), by the writer's `let_go(hold, due)` (which lets go unless its
    thread took the connection back meanwhile); a test waits on `let_went`."""

    def __init__(self, let_go: Callable[[H, float], None]) -> None:
        self._let_go = let_go
        self._cond = threading.Condition()
        self._due: dict[H, float] = {}
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.let_went = threading.Event()
        """Set each time it let go of a hold (a test clears and waits on it)."""

    def put_off(self, hold: H, seconds: float) -> float:
        """Let go of `hold` in `seconds` unless called off; its due time (on this clock)."""
        due = time.monotonic() + seconds
        with self._cond:
            if self._stopped:
                return due
            self._due[hold] = due
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._main, name="placeflow-idle-closer", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return due

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._due.clear()
            self._cond.notify()

    def _main(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    if not self._due:
                        self._cond.wait()
                        continue
                    hold, due = min(self._due.items(), key=lambda item: item[1])
                    left = due - time.monotonic()
                    if left <= 0:
                        del self._due[hold]
                        break
                    self._cond.wait(left)
                if self._stopped:
                    return
            self._let_go(hold, due)
            self.let_went.set()
