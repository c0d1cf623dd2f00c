"""The first Ctrl-C's outcome when the warehouse cannot say which run it stopped: a mark that
found no run says nothing was saved; a mark that did not answer in time never claims that."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from placeflow.cli import interrupt


@pytest.fixture(autouse=True)
def sigint_kept() -> Iterator[None]:
    """`stop` ignores SIGINT from then on (the process is leaving): given back after each."""
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_mark_that_found_no_run_says_nothing_was_saved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interrupt, "mark_run", lambda *a, **k: None)
    outcome = interrupt.Interrupt(db="wh.duckdb", as_json=True, cancel_jobs=False).stop()
    assert outcome["run_id"] is None and outcome["next"] is None
    assert outcome["message"].endswith("interrupted before the run was recorded; nothing was saved")


def test_a_mark_that_does_not_answer_in_time_never_claims_nothing_was_saved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def stuck(*args: Any, **kwargs: Any) -> None:
        release.wait()  # the warehouse held elsewhere: the mark never comes back in time

    monkeypatch.setattr(interrupt, "mark_run", stuck)
    monkeypatch.setattr(interrupt, "MARK_WAIT", 0.01)
    try:
        outcome = interrupt.Interrupt(db="wh.duckdb", as_json=True, cancel_jobs=False).stop()
    finally:
        release.set()
    assert outcome["status"] == "interrupted" and outcome["run_id"] is None
    assert "nothing was saved" not in outcome["message"]
    assert "`placeflow runs --db wh.duckdb` lists it" in outcome["message"]
