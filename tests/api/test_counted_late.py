"""When the service counts a request against the key's limits (the spec does not say): on
arrival, or only after a queue in front of its counter. The client counts each request from its
answer, the latest the service can count it, so neither reading sees a window overfilled
(docs/spec-readings.md, point 17)."""

from __future__ import annotations

import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.limiter import RateLimiter
from placeflow.emulator import FaultConfig
from placeflow.fields import RateLimits

from .conftest import FakeTime, MakeRig


class StampedAtSend(RateLimiter):
    """A limiter that counts a request only when it is let go (what the client did before)."""

    def answered(self) -> None:
        pass


def test_a_request_answered_late_counts_from_its_answer() -> None:
    """The first of 100 requests is answered 5 s after it left: the 101st waits until 63 s
    (the minute and its margin) after that answer, not after the send."""
    fake = FakeTime(0.0)
    limiter = RateLimiter(RateLimits.for_tier("paid"), clock=fake.clock, sleep=fake.sleep)
    limiter.acquire()
    fake.now = 5.0
    limiter.answered()
    for _ in range(99):
        limiter.acquire()
        limiter.answered()
    limiter.acquire()
    assert fake.now == pytest.approx(5.0 + 63.0)


def test_answered_without_a_grant_changes_nothing() -> None:
    """A thread that was let go for nothing has nothing to move; a second `answered` for one
    grant moves nothing more."""
    fake = FakeTime(0.0)
    limiter = RateLimiter(RateLimits(windows=((2, 10.0),)), clock=fake.clock, sleep=fake.sleep)
    limiter.answered()
    limiter.acquire()
    fake.now = 1.0
    limiter.answered()
    fake.now = 2.0
    limiter.answered()
    limiter.acquire()
    limiter.acquire()  # the window of 2 is full from the answer at 1.0: waits to 1 + 10.5
    assert fake.now == pytest.approx(11.5)


LATE = FaultConfig(seed=3, counted_late_rate=0.2, counted_late_seconds=5.0)
"""A fifth of the requests is counted 5 s after it was sent."""


def usage_calls(client: PlaceApiClient, n: int) -> None:
    for _ in range(n):
        client.usage()


def test_the_sandbox_counts_late_requests_late(make_rig: MakeRig) -> None:
    """The reading bites: a client that counts requests at their send overfills the sandbox's
    minute window and is refused with 429s (the sandbox's own count)."""
    rig = make_rig(faults=LATE)
    rig.client.limiter = StampedAtSend(
        RateLimits.for_tier("paid"), clock=rig.clock.now, sleep=rig.clock.sleep
    )
    usage_calls(rig.client, 300)
    key = rig.key_stats()
    assert key["rate_limited"] > 0
    assert rig.count("GET /v1/usage", 429) == key["rate_limited"]


def test_counted_from_its_answer_no_request_is_refused(make_rig: MakeRig) -> None:
    """The client's own limiter under the same reading: 300 requests, not one refused, and the
    sandbox never saw more than 100 in a minute or 10 in a second."""
    rig = make_rig(faults=LATE)
    usage_calls(rig.client, 300)
    key = rig.key_stats()
    assert rig.count("GET /v1/usage", 200) == 300
    assert key["rate_limited"] == 0
    assert key["peak_per_minute"] <= 100 and key["peak_per_second"] <= 10
