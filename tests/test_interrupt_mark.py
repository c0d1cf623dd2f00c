"""The first Ctrl-C's outcome when the warehouse cannot say which run it stopped: a mark that
found no run says nothing was saved; a mark that did not answer in time never claims that. And
when the cancel the user asked for did not happen (it hung or failed), the line says so."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from placeflow.cli import interrupt
from placeflow.state.marking import Marked


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


RUN = "run_20261128T211046_2fdae8"


@pytest.fixture
def one_job_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mark answers at once (waited for without a deadline): one job is still running."""
    marked = Marked(RUN, "interrupted", marked=True, jobs_submitted=1, jobs_running=1)
    monkeypatch.setattr(interrupt, "mark_run", lambda *a, **k: marked)
    monkeypatch.setattr(interrupt, "MARK_WAIT", None)


def test_a_cancel_asked_for_that_does_not_answer_in_time_is_said(
    monkeypatch: pytest.MonkeyPatch, one_job_running: None
) -> None:
    """--cancel-on-interrupt whose cancel does not answer within CANCEL_WAIT: the line says the
    cancel did not answer, that the job may still be running, and how to finish the run."""
    release = threading.Event()

    def stuck(db: str, run_id: str | None) -> int:
        release.wait(30)  # the service does not answer the DELETE before the wait is over
        return 1

    monkeypatch.setattr(interrupt, "_cancel", stuck)
    monkeypatch.setattr(interrupt, "CANCEL_WAIT", 0)
    try:
        outcome = interrupt.Interrupt(db="wh.duckdb", as_json=False, cancel_jobs=True).stop()
    finally:
        release.set()
    message = outcome["message"]
    assert outcome["cancelled"] == 0
    assert "cancelling its 1 running job(s) did not answer within 0 s" in message
    assert "may still be running" in message
    assert f"finish it with: placeflow resume {RUN} --db wh.duckdb" in message
    assert "--cancel-on-interrupt" in message


def test_a_cancel_asked_for_that_fails_is_said_with_its_error(
    monkeypatch: pytest.MonkeyPatch, one_job_running: None
) -> None:
    """A cancel that raises: the line names the error and says the job may still be running."""

    def refused(db: str, run_id: str | None) -> int:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(interrupt, "_cancel", refused)
    monkeypatch.setattr(interrupt, "CANCEL_WAIT", None)
    outcome = interrupt.Interrupt(db="wh.duckdb", as_json=True, cancel_jobs=True).stop()
    assert outcome["cancelled"] == 0
    assert (
        "cancelling its 1 running job(s) failed (ConnectionError: connection refused)"
        in (outcome["message"])
    )
    assert "may still be running" in outcome["message"]


def test_a_second_ctrl_c_whose_cancel_hung_is_said_after_the_hint(
    monkeypatch: pytest.MonkeyPatch, one_job_running: None
) -> None:
    """The second Ctrl-C asked for the cancel after the hint was printed: a cancel that did not
    answer is news, so the line is said again (not left at the hint)."""
    release = threading.Event()

    def stuck(db: str, run_id: str | None) -> int:
        release.wait(30)
        return 1

    monkeypatch.setattr(interrupt, "_cancel", stuck)
    monkeypatch.setattr(interrupt, "CANCEL_WAIT", 0)
    monkeypatch.setattr(interrupt.Interrupt, "_wait_second", lambda self, seconds: True)
    try:
        outcome = interrupt.Interrupt(db="wh.duckdb", as_json=False, cancel_jobs=False).stop()
    finally:
        release.set()
    assert outcome["_hinted"] is False
    assert "did not answer" in outcome["message"]
