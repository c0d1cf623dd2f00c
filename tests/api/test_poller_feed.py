"""The poller follows jobs handed to it through a feed while it runs (a sender beside it)."""

from __future__ import annotations

import pytest

from placeflow.api.feed import JobFeed
from placeflow.api.poller import JobPoller, PendingJob

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
