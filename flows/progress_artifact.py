"""A Prefect progress artifact of a flow run, kept from the run's events (`placeflow.events`).

The percentage is `placeflow.progress.Tally.fraction()`: the same counts the terminal shows.
The artifact is updated only when the whole percentage changes (at most about a hundred
updates a run), and the caller's own callback, if any, sees every event first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from placeflow.events import Event
from placeflow.progress import Tally

KEY = "place-refresh-progress"


class ProgressArtifact:
    """An event callback: tallies events and moves the flow run's progress artifact."""

    def __init__(
        self,
        description: str,
        forward: Callable[[Event], None] | None = None,
        *,
        key: str = KEY,
    ) -> None:
        self.tally = Tally()
        self._key = key
        self._forward = forward
        self._description = description
        self._shown = -1
        self._id: UUID | None = None

    def __call__(self, event: Event) -> None:
        if self._forward is not None:
            self._forward(event)
        self.tally(event)
        percent = int(self.tally.fraction() * 100)
        if percent == self._shown:
            return
        self._shown = percent
        if self._id is None:
            made = create_progress_artifact(
                progress=float(percent), key=self._key, description=self._description
            )
            self._id = cast(UUID, made)  # called from sync code: the synchronous variant ran
        else:
            update_progress_artifact(self._id, float(percent))
