"""Backoff arithmetic and the parsing of the server's requested waits."""

from __future__ import annotations

import pytest

from placeflow.api.errors import RateLimited
from placeflow.api.retry import RetryPolicy, parse_retry_after, parse_timestamp

NOW = 1_790_000_000.0


def test_backoff_grows_exponentially_and_is_capped() -> None:
    """Without jitter the waits are 0.5, 1, 2, 4 ... up to max_backoff."""
    policy = RetryPolicy(initial_backoff=0.5, max_backoff=3.0, jitter=0.0)
    assert [policy.backoff(n, 0.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_only_shortens_within_its_fraction() -> None:
    """With jitter 0.5 a wait lies between half and all of the backoff."""
    policy = RetryPolicy(initial_backoff=2.0, jitter=0.5)
    assert policy.backoff(1, 0.0) == 2.0
    assert policy.backoff(1, 0.999) == pytest.approx(1.001)


def test_server_wait_is_a_floor() -> None:
    """A Retry-After longer than the backoff is honoured; a shorter one still backs off."""
    policy = RetryPolicy(initial_backoff=1.0, jitter=0.0)
    assert policy.delay(RateLimited("x", wait=7.0), 1, 0.0) == 7.0
    assert policy.delay(RateLimited("x", wait=0.0), 3, 0.0) == 4.0
    assert policy.delay(RateLimited("x", wait=None), 1, 0.0) == 1.0


def test_policy_rejects_nonsense() -> None:
    """Zero attempts or a jitter of 1 or more are configuration errors."""
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=1.0)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("3", 3.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("-4", 0.0),
        (None, None),
        ("soon", None),
        ("Thu, 01 Jan 2026 00:00:10 GMT", 10.0),
    ],
)
def test_retry_after_forms(header: str | None, expected: float | None) -> None:
    """Retry-After is read as seconds or as an HTTP date; nonsense reads as absent."""
    now = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    assert parse_retry_after(header, now=now) == expected


def test_iso_timestamps_with_z_or_offset() -> None:
    """resume_at and expires_at parse with a Z or an explicit offset, else None."""
    assert parse_timestamp("2026-01-01T00:00:00Z") == 1_767_225_600.0
    assert parse_timestamp("2026-01-01T01:00:00+01:00") == 1_767_225_600.0
    assert parse_timestamp("not a time") is None
    assert parse_timestamp(None) is None
