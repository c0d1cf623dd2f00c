"""How long to wait before retrying a transient failure, and for how long to keep trying."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from placeflow.api.errors import TransientError
from placeflow.errors import OptionsError


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """Capped exponential backoff with jitter, for `TransientError` only.

    The n-th retry waits ``min(max_backoff, initial_backoff * multiplier**(n-1))``, shortened by
    up to `jitter` of itself at random. When the server names a wait (Retry-After, a
    maintenance ``resume_at``) the client waits at least that long; a missing or zero
    Retry-After still backs off. A server wait longer than `max_server_wait`, or one that would
    take the call past `budget` seconds of waiting in all, ends the retries: the error is raised.
    """

    max_attempts: int = 6
    initial_backoff: float = 0.5
    max_backoff: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_server_wait: float = 300.0
    budget: float = 900.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise OptionsError("max_attempts must be at least 1 (1 means no retries)")
        if self.initial_backoff <= 0 or self.max_backoff < self.initial_backoff:
            raise OptionsError("need 0 < initial_backoff <= max_backoff")
        if self.multiplier < 1:
            raise OptionsError("multiplier must be at least 1")
        if not 0 <= self.jitter < 1:
            raise OptionsError("jitter is a fraction: 0 <= jitter < 1")
        if self.max_server_wait < 0 or self.budget < 0:
            raise OptionsError("max_server_wait and budget must not be negative")

    @classmethod
    def none(cls) -> RetryPolicy:
        """One attempt: every error is raised as it comes."""
        return cls(max_attempts=1)

    def backoff(self, retry: int, rand: float) -> float:
        """The backoff before retry number `retry` (1-based); `rand` is uniform in [0, 1)."""
        base = min(self.max_backoff, self.initial_backoff * self.multiplier ** (retry - 1))
        return base * (1.0 - self.jitter * rand)

    def delay(self, error: TransientError, retry: int, rand: float) -> float:
        """Seconds to wait before retry number `retry` after `error`."""
        backoff = self.backoff(retry, rand)
        if error.wait is not None and error.wait > 0:
            return max(error.wait, backoff)
        return backoff


@dataclass(frozen=True, kw_only=True)
class PromptRetry:
    """How a keyed POST whose answer was lost is retried at once, before any backoff.

    The spec asks for a prompt retry after an uncertain job submission and does not show how
    long the service keeps an Idempotency-Key: a replay that leaves while the key is kept gets
    the original job, one that leaves after it may be new work billed again. So a lost answer
    (a reset, a timeout after the body left, a 5xx that is not 429 or 503) is replayed up to
    `tries` times, `spacing` seconds apart, each replay taking the next rate-limit slot before
    new requests; past them the caller asks the usage before sending it again. 429 and 503
    still back off: the service asked to wait.
    """

    tries: int = 10
    spacing: float = 0.02

    def __post_init__(self) -> None:
        if self.tries < 0 or self.spacing < 0:
            raise OptionsError("a prompt retry needs tries >= 0 and spacing >= 0")

    @property
    def span(self) -> float:
        """The seconds the prompt tries take at least (their spacing, not their answers)."""
        return self.tries * self.spacing


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Retry-After in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def parse_timestamp(value: object) -> float | None:
    """An ISO 8601 timestamp (``Z`` or offset) as epoch seconds; None when unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
