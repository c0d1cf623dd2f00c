"""A research's send stage ends as a run ends (#43): the `Stop` it keeps in its info becomes the
run's own error, its exit code from `errors.EXIT_CODES`, and survives a flow's pickling."""

from __future__ import annotations

import pickle

import pytest

from placeflow.errors import (
    EXIT_REFUSED,
    BudgetRefused,
    CreditsRanOut,
    RunStopped,
    exit_code,
    stop,
)
from placeflow.pipeline.research.send import SendInfo


@pytest.mark.parametrize(
    ("kind", "error", "status"),
    [("policy", BudgetRefused, "refused"), ("budget", CreditsRanOut, "interrupted"),
     ("credits", CreditsRanOut, "interrupted")],
)  # fmt: skip
def test_a_refusing_stop_ends_the_research_as_the_runs_refusal(
    kind: str, error: type[RunStopped], status: str
) -> None:
    """A policy stop ends as BudgetRefused, a budget or credits stop as CreditsRanOut, each
    carrying the run and its summary, exit 3 by EXIT_CODES; the info's status follows."""
    sent = SendInfo(requests=2, doubtful=0, stop=stop(kind, "why"), message="why")
    assert sent.refused and sent.status == status
    assert sent.stop is not None
    ended = sent.stop.ended("rr_1", {"summary": 1})
    assert type(ended) is error and str(ended) == "why"
    assert ended.run_id == "rr_1" and ended.summary == {"summary": 1}
    assert exit_code(ended) == EXIT_REFUSED


def test_other_stops_and_doubtful_requests_leave_the_run_interrupted() -> None:
    """An unavailable or failed stop raises nothing (the summary says interrupted, exit 1 by its
    status); requests left lost or uncertain interrupt a send that did not stop."""
    for kind in ("unavailable", "failed"):
        sent = SendInfo(requests=1, doubtful=0, stop=stop(kind, "later"))
        assert sent.stop is not None and sent.stop.ended("rr_1", None) is None
        assert not sent.refused and sent.status == "interrupted"
    assert SendInfo(requests=3, doubtful=1).status == "interrupted"
    assert SendInfo(requests=3, doubtful=0).status == "completed"


def test_the_send_info_with_its_stop_survives_pickling() -> None:
    """The stage's info is a flow task's result: its stop comes back with its kind and class."""
    sent = pickle.loads(pickle.dumps(SendInfo(1, 0, stop("policy", "no"), "no")))
    assert sent.stop is not None and sent.stop.kind == "policy" and sent.refused
