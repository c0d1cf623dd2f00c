"""The shared rate limiter: a sliding window over the last grants, never a burst above a window."""

from __future__ import annotations

import threading
import time

import pytest

from placeflow.api.limiter import RateLimiter
from placeflow.fields import RateLimits

from .conftest import FakeTime


def max_in_window(times: list[float], seconds: float) -> int:
    """The most grants inside any half-open span of `seconds` (the server's own count)."""
    times = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - seconds:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def grant_times(limiter: RateLimiter, fake: FakeTime, n: int) -> list[float]:
    out = []
    for _ in range(n):
        limiter.acquire()
        out.append(fake.now)
    return out


def test_paid_tier_windows_hold_over_many_requests() -> None:
    """250 requests never put more than 10 in any second or 100 in any minute."""
    fake = FakeTime()
    limiter = RateLimiter(RateLimits.for_tier("paid"), clock=fake.clock, sleep=fake.sleep)
    times = grant_times(limiter, fake, 250)
    assert max_in_window(times, 1.0) == 10
    assert max_in_window(times, 60.0) == 100


def test_first_burst_goes_at_once_then_waits_a_window_plus_slack() -> None:
    """The first ten go at once; the eleventh waits one second plus the 5% safety margin."""
    fake = FakeTime(0.0)
    limiter = RateLimiter(RateLimits.for_tier("paid"), clock=fake.clock, sleep=fake.sleep)
    times = grant_times(limiter, fake, 11)
    assert times[:10] == [0.0] * 10
    assert times[10] == pytest.approx(1.05)


def test_minute_window_binds_after_a_hundred() -> None:
    """After 100 grants the 101st waits until the first leaves the minute window (plus slack)."""
    fake = FakeTime(0.0)
    limiter = RateLimiter(RateLimits.for_tier("paid"), clock=fake.clock, sleep=fake.sleep)
    times = grant_times(limiter, fake, 101)
    assert times[100] == pytest.approx(63.0)


def test_free_tier_and_window_scale() -> None:
    """for_tier('free', window_scale=0.05) gives 5 per 50 ms and 10 per 3 s."""
    limits = RateLimits.for_tier("free", window_scale=0.05)
    assert limits.windows == ((5, 0.05), (10, 3.0))
    fake = FakeTime(0.0)
    limiter = RateLimiter(limits, clock=fake.clock, sleep=fake.sleep)
    times = grant_times(limiter, fake, 30)
    assert max_in_window(times, 0.05) <= 5
    assert max_in_window(times, 3.0) <= 10


def test_min_slack_applies_to_short_windows() -> None:
    """A 50 ms window gets the 50 ms minimum margin, not just 5% of itself; a minute gets 3 s."""
    limits = RateLimits.for_tier("paid", window_scale=0.05)
    assert limits.spacing(0.05) == pytest.approx(0.1)
    assert limits.spacing(60.0) == pytest.approx(63.0)


def test_defer_holds_every_caller_back() -> None:
    """After defer(2), the next grant waits two seconds even with the windows empty."""
    fake = FakeTime(0.0)
    limiter = RateLimiter(clock=fake.clock, sleep=fake.sleep)
    limiter.defer(2.0)
    limiter.acquire()
    assert fake.now == pytest.approx(2.0)


def test_delay_reports_without_granting() -> None:
    """delay() says how long an acquire would wait and does not use up a slot."""
    fake = FakeTime(0.0)
    limiter = RateLimiter(RateLimits(windows=((1, 1.0),)), clock=fake.clock, sleep=fake.sleep)
    assert limiter.delay() == 0.0
    limiter.acquire()
    assert limiter.delay() == pytest.approx(1.05)
    assert limiter.granted == 1


@pytest.mark.parametrize(
    "windows", [(), ((0, 1.0),), ((5, 0.0),)], ids=["none", "zero-count", "zero-seconds"]
)
def test_invalid_windows_are_refused(windows: tuple[tuple[int, float], ...]) -> None:
    """Limits without a usable window are refused at construction."""
    with pytest.raises(ValueError, match="window"):
        RateLimits(windows=windows)


def test_unknown_tier_is_refused() -> None:
    """Only the spec's tiers have built-in limits."""
    with pytest.raises(ValueError, match="tier"):
        RateLimits.for_tier("gold")


def test_threads_sharing_a_limiter_never_exceed_a_window() -> None:
    """Eight threads taking 48 grants in real time keep 5 per 50 ms and 20 per 400 ms."""
    local = threading.local()

    def clock() -> float:
        local.t = time.monotonic()
        return float(local.t)

    limits = RateLimits(windows=((5, 0.05), (20, 0.4)), slack=0.0, min_slack=0.0)
    limiter = RateLimiter(limits, clock=clock)
    granted: list[float] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(6):
            limiter.acquire()
            with lock:
                granted.append(local.t)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 48 == limiter.granted
    assert max_in_window(granted, 0.05) <= 5
    assert max_in_window(granted, 0.4) <= 20
