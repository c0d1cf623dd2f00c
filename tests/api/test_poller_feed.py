"""The poller follows jobs handed to it through a feed while it runs (a sender beside it)."""

from __future__ import annotations

from typing import Any

import pytest

from placeflow.api.feed import JobFeed
from placeflow.api.jobref import PendingJob
from placeflow.api.poller import JobPoller

from .conftest import FakeTime, Script, js, mock_client
from .test_poller import status


def test_jobs_fed_while_following_are_polled_at_their_eta_and_yielded() -> None:
    """Jobs put in the feed after following began are polled once each, when their eta says,
    a job handed twice is followed once, and following ends once the feed is closed and every
    job has ended."""
    time = FakeTime()
    script = Script([lambda r: js(200, status(r.url.path.rsplit("/", 1)[-1], "completed"))])
    p = JobPoller(mock_client(script, time), floor=1.0, jitter=0.0)
    feed = JobFeed()
    for job in (PendingJob("job_b", 5.0), PendingJob("job_c", 2.0), PendingJob("job_b", 5.0)):
        feed.put(job)
    feed.close()
    start = time.now
    ended = [s.batch_id for s in p.iter_follow([PendingJob("job_a", 3.0)], feed)]
    assert ended == ["job_c", "job_a", "job_b"] and p.polls == 3
    assert [r.url.path for r in script.requests] == [f"/v1/jobs/{j}" for j in ended]
    assert time.now - start == pytest.approx(5.0)
    assert not feed.open and feed.take(None) == []


def test_with_nothing_due_the_poller_waits_on_the_feed_not_the_clock() -> None:
    """With no job yet, following blocks on the feed (never sleeping the clock) until a job or
    the close comes; a closed empty feed ends it with no request."""
    time = FakeTime()
    script = Script([lambda r: js(200, status(r.url.path.rsplit("/", 1)[-1], "completed"))])
    p = JobPoller(mock_client(script, time), floor=1.0, jitter=0.0)
    feed = JobFeed()
    feed.close()
    assert list(p.iter_follow([], feed)) == [] and script.requests == [] and time.sleeps == []


def test_a_fed_job_with_its_submission_answer_teaches_the_etas_so_a_long_one_is_not_probed() -> (
    None
):
    """A job fed with what its submission answered (created, predicted end) that ends on time
    teaches the poller that the service's etas are true: a 120 s job fed after it is polled
    once, at its eta, not probed at a quarter of it first."""
    time = FakeTime()

    def answer(r: Any) -> Any:
        batch_id = r.url.path.rsplit("/", 1)[-1]
        done = {**status(batch_id, "completed"), "completed_at": "2026-01-01T00:00:05Z"}
        return js(200, done)

    script = Script([answer])
    p = JobPoller(mock_client(script, time), floor=1.0, ceiling=300.0, jitter=0.0)
    feed = JobFeed()
    first = PendingJob("job_a", 5.0, "2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z")
    ended = []
    for s in p.iter_follow([first], feed):
        ended.append(s.batch_id)
        if s.batch_id == "job_a":
            assert p.learner.learned  # one true eta is enough to trust the others
            feed.put(PendingJob("job_b", 120.0))
            feed.close()
    assert ended == ["job_a", "job_b"] and p.polls == 2
    assert time.sleeps == pytest.approx([5.0, 120.0])
