"""Contract: per-key, per-tier rate limits with Retry-After, and the peaks the sandbox observed."""

from __future__ import annotations

from placeflow.emulator.ratelimit import KeyRateLimiter

from .conftest import FREE_KEY, KEY, Harness, MakeHarness


def usage(h: Harness, key: str = KEY) -> int:
    return h.http.get("/v1/usage", headers={"X-API-Key": key}).status_code


def test_paid_key_gets_ten_per_second_then_429_with_retry_after(sb: Harness) -> None:
    """The 11th request within a second is 429 with Retry-After and the gateway body."""
    assert [usage(sb) for _ in range(10)] == [200] * 10
    r = sb.get("/v1/usage")
    assert r.status_code == 429
    assert r.json() == {"detail": {"error": "rate limit exceeded"}}
    assert int(r.headers["retry-after"]) >= 1
    sb.tick(1.0)
    assert usage(sb) == 200
    key = sb.stats()["keys"][KEY]
    assert key["rate_limited"] == 1 and key["peak_per_second"] == 11


def test_paid_key_gets_one_hundred_per_minute(sb: Harness) -> None:
    """Spread under 10/s, the 101st request inside a minute is 429; a minute later it passes."""
    for _ in range(10):
        assert [usage(sb) for _ in range(10)] == [200] * 10
        sb.tick(1.0)
    assert usage(sb) == 429
    sb.tick(50.0)
    assert usage(sb) == 200
    assert sb.stats()["keys"][KEY]["peak_per_minute"] == 101


def test_free_key_limits_are_five_per_second_and_ten_per_minute(sb: Harness) -> None:
    """A free key gets 5/s and 10/min."""
    assert [usage(sb, FREE_KEY) for _ in range(6)] == [200] * 5 + [429]
    sb.tick(1.0)
    assert [usage(sb, FREE_KEY) for _ in range(6)] == [200] * 5 + [429]
    sb.tick(1.0)
    assert usage(sb, FREE_KEY) == 429
    assert usage(sb) == 200, "limits are per key"


def test_window_scale_shrinks_both_windows(make_harness: MakeHarness) -> None:
    """rate_window_scale 1/16 makes the second 62.5 ms and the minute 3.75 s, limits unchanged."""
    h = make_harness(rate_window_scale=0.0625)
    for _ in range(10):
        assert [usage(h) for _ in range(10)] == [200] * 10
        h.tick(0.0625)
    assert usage(h) == 429
    h.tick(3.25)
    assert usage(h) == 200


def test_refused_requests_do_not_use_up_the_limit() -> None:
    """A 429'd request is not counted against the window: the next second admits a full ten."""
    limiter = KeyRateLimiter.for_limits(10, 100, 1.0)
    for _ in range(30):
        limiter.admit(0.0)
    assert limiter.rejected == 20
    assert [limiter.admit(1.0) for _ in range(10)] == [None] * 10
    assert limiter.peak_per_second == 30


def test_pricing_and_health_are_not_rate_limited(sb: Harness) -> None:
    """Unauthenticated pricing and health do not count against any key."""
    for _ in range(30):
        assert sb.http.get("/v1/pricing").status_code == 200
    assert usage(sb) == 200
