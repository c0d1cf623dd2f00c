"""One rate limiter per API key per process: every request, from any thread, asks it first.

It keeps the send times of the last requests it allowed and lets a new one go only when, in
every window of the key's tier (10 per second and 100 per minute for paid keys), fewer than the
window's count were sent within the window's length plus a safety margin. It is a sliding-window
log, not a token bucket, so it can never burst above a window's count.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Tier = Literal["free", "paid"]

TIER_WINDOWS: dict[str, tuple[tuple[int, float], ...]] = {
    "free": ((5, 1.0), (10, 60.0)),
    "paid": ((10, 1.0), (100, 60.0)),
}
"""The spec's Limits table: (requests, seconds) per window, per tier."""
_UNIT_SECONDS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_WINDOW = re.compile(r"(?P<count>\d+)\s*/\s*(?P<every>\d+(?:\.\d+)?)?\s*(?P<unit>s|sec|m|min|h)")


@dataclass(frozen=True, kw_only=True)
class RateLimits:
    """Windows as (count, seconds) pairs: at most `count` requests in any `seconds` span.

    The server stamps a request when it arrives, and arrival times jitter, so each window is
    kept `slack` of its length longer than stated, and never less than `min_slack` seconds longer.
    """

    windows: tuple[tuple[int, float], ...] = TIER_WINDOWS["paid"]
    slack: float = 0.05
    min_slack: float = 0.05

    def __post_init__(self) -> None:
        if not self.windows:
            raise ValueError("give at least one (count, seconds) window")
        for count, seconds in self.windows:
            if count < 1 or seconds <= 0:
                raise ValueError(f"window ({count}, {seconds}) needs count >= 1 and seconds > 0")
        if self.slack < 0 or self.min_slack < 0:
            raise ValueError("slack and min_slack must not be negative")

    @classmethod
    def for_tier(
        cls,
        tier: Tier | str,
        *,
        window_scale: float = 1.0,
        slack: float = 0.05,
        min_slack: float = 0.05,
    ) -> RateLimits:
        """The spec's limits for `tier`, each window's length multiplied by `window_scale`
        (the sandbox's ``rate_window_scale``, so tests can have a three-second minute)."""
        if tier not in TIER_WINDOWS:
            raise ValueError(f"tier must be one of {sorted(TIER_WINDOWS)}, not {tier!r}")
        if window_scale <= 0:
            raise ValueError("window_scale must be positive")
        windows = tuple((n, s * window_scale) for n, s in TIER_WINDOWS[tier])
        return cls(windows=windows, slack=slack, min_slack=min_slack)

    @classmethod
    def parse(cls, text: str) -> RateLimits:
        """Windows written as the spec writes limits: ``10/s,100/min`` (also ``/h``, ``/5s``).

        For keys whose limits differ from their tier's (the spec says keys carry their own)."""
        windows = []
        for part in (p.strip() for p in text.split(",")):
            match = _WINDOW.fullmatch(part)
            if not match:
                raise ValueError(
                    f"rate limit {part!r} is not COUNT/UNIT (e.g. 10/s, 100/min, 1000/5s)"
                )
            count, every, unit = match.group("count", "every", "unit")
            windows.append((int(count), float(every or 1) * _UNIT_SECONDS[unit]))
        return cls(windows=tuple(windows))

    def spacing(self, seconds: float) -> float:
        """A window's length plus its safety margin."""
        return seconds + max(self.slack * seconds, self.min_slack)


class RateLimiter:
    """A thread-safe sliding-window limiter with an injectable clock and sleep.

    Share one instance between every client of the same key in a process. `acquire` blocks
    until a request may be sent and records it as sent; `defer` holds everyone back after the
    server said to wait (429 Retry-After, maintenance).
    """

    def __init__(
        self,
        limits: RateLimits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.limits = limits or RateLimits()
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._windows = tuple(
            (count, self.limits.spacing(seconds)) for count, seconds in self.limits.windows
        )
        depth = max(count for count, _ in self._windows)
        self._sent: deque[float] = deque(maxlen=depth)
        self._blocked_until = float("-inf")
        self.granted = 0
        self.waited = 0.0

    def __repr__(self) -> str:
        windows = ", ".join(f"{n}/{s:g}s" for n, s in self.limits.windows)
        return f"RateLimiter({windows})"

    def _delay(self, now: float) -> float:
        """Seconds until one more request fits every window; 0 when it fits now."""
        ready = self._blocked_until
        for count, spacing in self._windows:
            if len(self._sent) >= count:
                ready = max(ready, self._sent[-count] + spacing)
        return max(0.0, ready - now)

    def acquire(self) -> float:
        """Wait until a request may be sent, record it, and return how long this call waited."""
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                delay = self._delay(now)
                if delay <= 0:
                    # Keep the log in order even if a caller's clock stepped back.
                    self._sent.append(max(now, self._sent[-1]) if self._sent else now)
                    self.granted += 1
                    self.waited += waited
                    return waited
            self._sleep(delay)
            waited += delay

    def delay(self) -> float:
        """Seconds an `acquire` now would wait (0 when a request may go at once)."""
        with self._lock:
            return self._delay(self._clock())

    def defer(self, seconds: float) -> None:
        """Send nothing for `seconds` from now (the server asked every client to wait)."""
        with self._lock:
            self._blocked_until = max(self._blocked_until, self._clock() + seconds)
