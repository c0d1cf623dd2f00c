"""Per-key rate limiting as the service does it, and the peak rates the sandbox observed."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field


@dataclass
class Window:
    limit: int
    seconds: float
    granted: deque[float] = field(default_factory=deque)
    arrivals: deque[float] = field(default_factory=deque)
    peak: int = 0

    def _trim(self, q: deque[float], now: float) -> None:
        while q and q[0] <= now - self.seconds:
            q.popleft()

    def observe(self, now: float) -> None:
        """Count an arrival (accepted or not) toward the peak rate seen in any window."""
        self._trim(self.arrivals, now)
        self.arrivals.append(now)
        self.peak = max(self.peak, len(self.arrivals))

    def wait(self, now: float) -> float:
        """Seconds until one more request fits; 0 when it fits now."""
        self._trim(self.granted, now)
        if len(self.granted) < self.limit:
            return 0.0
        return self.granted[0] + self.seconds - now


@dataclass
class KeyRateLimiter:
    """Sliding windows over accepted requests: a request is refused when either the per-second
    or the per-minute window already holds its limit. Refused requests do not use up the limit."""

    windows: tuple[Window, ...]
    rejected: int = 0

    @classmethod
    def for_limits(cls, per_second: int, per_minute: int, scale: float) -> KeyRateLimiter:
        return cls(windows=(Window(per_second, 1.0 * scale), Window(per_minute, 60.0 * scale)))

    def admit(self, now: float) -> int | None:
        """Record an arrival; None when admitted, else the Retry-After in whole seconds (>= 1)."""
        for w in self.windows:
            w.observe(now)
        wait = max(w.wait(now) for w in self.windows)
        if wait > 0:
            self.rejected += 1
            return max(1, math.ceil(wait))
        for w in self.windows:
            w.granted.append(now)
        return None

    @property
    def peak_per_second(self) -> int:
        return self.windows[0].peak

    @property
    def peak_per_minute(self) -> int:
        return self.windows[1].peak
