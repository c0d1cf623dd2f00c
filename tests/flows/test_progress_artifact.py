"""The flow run's progress artifact: updated as the percentage moves, at most once a second,
never holding back the run's 100 % (the artifact as Prefect stores it is checked in
tests/e2e/test_progress.py)."""

from __future__ import annotations

from placeflow.events import Event, JobProgress, RowsLoaded, StageFinished, StageStarted
from placeflow.flows.progress_artifact import EVERY, ProgressArtifact


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_updates_are_paced_and_the_end_is_always_sent() -> None:
    """Ten chunks processed within one second send one update between the first and 100 %;
    after EVERY seconds the next change is sent; every event reaches the caller's callback."""
    clock, sent, seen = Clock(), list[int](), list[Event]()
    progress = ProgressArtifact("test", seen.append, clock=clock, send=sent.append)
    progress(StageStarted("read"))
    progress(StageFinished("plan", None, {"places": 100, "chunks": 10}))
    for k in range(1, 11):
        clock.now = k * EVERY / 20
        progress(JobProgress("job-1", "running", k * 10, 100))
    assert sent == [0]  # 10 % and later changes came within EVERY of the first update
    clock.now = EVERY * 2
    progress(RowsLoaded(0, 50, 50, 0))
    assert sent == [0, 85]
    progress(RowsLoaded(1, 50, 50, 0))
    progress(StageFinished("account", None, {}))
    assert sent == [0, 85, 100] and len(seen) == 15
