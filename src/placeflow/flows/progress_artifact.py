"""A Prefect progress artifact of a flow run, kept from the run's events (`placeflow.events`).

The percentage is `placeflow.cli.progress.Tally.fraction()`: the same counts the terminal shows.
The artifact is updated when the whole percentage changes, at most once every `every` seconds
(each update is a request to the Prefect server: with one per change, a run of many chunks
would pay one per chunk), and always when the run reaches 100 %. The caller's own callback, if
any, sees every event first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from placeflow.events import Event, Tally

KEY = "place-refresh-progress"
EVERY = 1.0
"""Seconds between two updates of the artifact (the last one, at 100 %, is never held back)."""


class PrefectProgress:
    """Sends a percentage to the flow run's progress artifact: created with the first value,
    updated after."""

    def __init__(self, key: str, description: str) -> None:
        self._key = key
        self._description = description
        self._id: UUID | None = None

    def __call__(self, percent: int) -> None:
        if self._id is None:
            made = create_progress_artifact(
                progress=float(percent), key=self._key, description=self._description
            )
            self._id = cast(UUID, made)  # called from sync code: the synchronous variant ran
        else:
            update_progress_artifact(self._id, float(percent))


class ProgressArtifact:
    """An event callback: tallies events and moves the flow run's progress artifact."""

    def __init__(
        self,
        description: str,
        forward: Callable[[Event], None] | None = None,
        *,
        key: str = KEY,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
        send: Callable[[int], None] | None = None,
    ) -> None:
        self.tally = Tally()
        self._forward = forward
        self._send = send or PrefectProgress(key, description)
        self._every = every
        self._clock = clock
        self._shown = -1
        self._at: float | None = None

    def __call__(self, event: Event) -> None:
        if self._forward is not None:
            self._forward(event)
        self.tally(event)
        percent = int(self.tally.fraction() * 100)
        if percent == self._shown:
            return
        now = self._clock()
        if percent < 100 and self._at is not None and now - self._at < self._every:
            return
        self._shown, self._at = percent, now
        self._send(percent)
