"""The flows' step wrapper: per-chunk stages are plain calls, logged and retried as their tasks
were (the flow's own task runs, as the Prefect server stores them, are checked in
tests/e2e/test_flow_artifacts.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from placeflow.api.errors import RateLimited, TransientError
from placeflow.flows.tasks import PER_CHUNK, RETRIES, RETRY_DELAY, as_task, chunk_call


@dataclass(frozen=True)
class Loaded:
    rows: int
    chunk_no: int


class Flaky:
    """A stage that fails with a transient error `fails` times, then loads its chunk."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.calls = 0

    def __call__(self, chunk_no: int) -> Loaded:
        self.calls += 1
        if self.calls <= self.fails:
            raise RateLimited("429 from the service")
        return Loaded(rows=10, chunk_no=chunk_no)


def logged(caplog: pytest.LogCaptureFixture) -> logging.Logger:
    caplog.set_level(logging.INFO, logger="test.chunks")
    return logging.getLogger("test.chunks")


def test_network_stage_retries_transient_failures(caplog: pytest.LogCaptureFixture) -> None:
    """A fetch that fails twice transiently is called again after RETRY_DELAY each time, and
    its result and counts are logged once it succeeds."""
    fn = Flaky(fails=2)
    slept: list[float] = []
    call = chunk_call("fetch", fn, log=logged(caplog), sleep=slept.append)
    assert call(7) == Loaded(rows=10, chunk_no=7)
    assert fn.calls == 3 and slept == [RETRY_DELAY, RETRY_DELAY]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("retry" in m for m in messages) == 2
    assert messages[-1].startswith("fetch: rows=10 chunk_no=7 (")


def test_network_stage_gives_up_after_its_retries(caplog: pytest.LogCaptureFixture) -> None:
    """After RETRIES retries the transient error reaches the caller."""
    fn = Flaky(fails=RETRIES + 1)
    slept: list[float] = []
    call = chunk_call("submit", fn, log=logged(caplog), sleep=slept.append)
    with pytest.raises(TransientError):
        call(1)
    assert fn.calls == RETRIES + 1 and len(slept) == RETRIES


def test_local_stage_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    """A load's failure is raised at once: only the stages that talk to the service retry."""
    fn = Flaky(fails=1)
    slept: list[float] = []
    with pytest.raises(TransientError):
        chunk_call("load", fn, log=logged(caplog), sleep=slept.append)(1)
    assert fn.calls == 1 and slept == []


def test_per_chunk_stages_are_plain_calls() -> None:
    """Outside a flow run too, as_task makes each per-chunk stage a plain call of the stage
    (logged to placeflow's own logger), not a Prefect task run."""
    fn = Flaky(fails=0)
    for name in sorted(PER_CHUNK):
        call = as_task(name, fn)
        assert getattr(call, "__wrapped__", None) is fn
        assert call(3) == Loaded(rows=10, chunk_no=3)
    assert fn.calls == len(PER_CHUNK)
