"""One rate limiter per API key: every request, from any thread or process, asks it first.

It keeps the times of the last requests it allowed and lets a new one go only when, in every
window of the key's tier (10 per second and 100 per minute for paid keys), fewer than the
window's count were sent within the window's length plus a safety margin. It is a sliding-window
log, not a token bucket, so it can never burst above a window's count.

A request is stamped twice: when it is let go, and again when its answer (or its failure) comes
back (`answered`). The spec does not say when the service counts a request: on arrival, after a
queue in front of it, or when it answers; each is no earlier than the send and no later than the
answer. Counting every request at its answer keeps each window's count at the server within the
limit whatever the latency (docs/spec-readings.md, point 17).

Where the log lives decides who shares it: `MemoryLog` (the default) is this process's;
`FileLog` is a small file under an exclusive `flock`, shared by every process of the machine
that uses the same key (`machine_limiter`). A process killed while holding the file's lock
lets it go as it dies. Anything with `acquire`, `delay` and `defer` is a `RateGate`: a flow
can hand the client one backed by an orchestrator's own rate limits instead.
"""

from __future__ import annotations

import bisect
import fcntl
import os
import re
import stat
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from placeflow.errors import ConfigError, OptionsError
from placeflow.fields import RateLimits


class RateGate(Protocol):
    """What a client asks before each request; `RateLimiter` is one, a flow may pass another."""

    def acquire(self, *, urgent: bool = False) -> float:
        """Wait until a request may be sent, count it as sent, return the seconds waited.
        `urgent`: a replay of a request whose answer was lost, let go before new requests."""
        ...

    def delay(self) -> float:
        """Seconds an `acquire` now would wait (0 when a request may go at once)."""
        ...

    def defer(self, seconds: float) -> None:
        """Let nothing through for `seconds` from now (the server asked every client to wait)."""
        ...

    def answered(self) -> None:
        """The request this thread was last let go for has its answer (or failed): count it
        from now, as the server may have counted it as late as that."""
        ...


@dataclass
class LogState:
    """A window log's contents: the last send times, in order, and a hold-everyone-until time."""

    sent: list[float] = field(default_factory=list)
    blocked_until: float = float("-inf")


class WindowLog(Protocol):
    """Where a limiter's `LogState` lives; `hold` lends it to one caller at a time."""

    def hold(self) -> AbstractContextManager[LogState]: ...


class MemoryLog:
    """The log in this process's memory, behind a thread lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = LogState()

    @contextmanager
    def hold(self) -> Iterator[LogState]:
        with self._lock:
            yield self._state


_SLOT = struct.Struct("<d")
_MAX_SLOTS = 100_000


class FileLog:
    """The log in a small file under an exclusive `flock`: shared by every process that opens it.

    The file holds doubles: the hold-until time, then the send times in order. It is rewritten
    whole (one write of under a page) while the lock is held; the lock is the kernel's, so a
    process that dies holding it lets it go. Stamps come from the limiter's clock, which every
    sharing process must share (`time.monotonic` does on one machine).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # flock is per open file: threads take turns first
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"FileLog({str(self.path)!r})"

    def _open(self) -> int:
        if self._fd is None:
            flags = (
                os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            )
            self._fd = os.open(self.path, flags, 0o600)
        return self._fd

    @contextmanager
    def hold(self) -> Iterator[LogState]:
        with self._lock:
            fd = self._open()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = min(os.fstat(fd).st_size, _SLOT.size * (_MAX_SLOTS + 1))
                raw = os.pread(fd, size, 0)
                values = [v for (v,) in _SLOT.iter_unpack(raw[: len(raw) - len(raw) % _SLOT.size])]
                state = LogState(values[1:], values[0]) if values else LogState()
                before = (list(state.sent), state.blocked_until)
                yield state
                if (state.sent, state.blocked_until) != before:
                    data = b"".join(_SLOT.pack(v) for v in (state.blocked_until, *state.sent))
                    os.pwrite(fd, data, 0)
                    if len(data) < len(raw):
                        os.ftruncate(fd, len(data))
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file (the next `hold` opens it again)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def state_dir() -> Path:
    """A directory only this user can write, for the limiters' files: the login session's
    runtime directory when there is one, else one under the system's temporary directory."""
    uid = os.getuid()
    runtime = Path(f"/run/user/{uid}")
    base = (
        runtime if runtime.is_dir() and os.access(runtime, os.W_OK) else Path(tempfile.gettempdir())
    )
    path = base / f"placeflow-{uid}" / "ratelimits"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for part in (path.parent, path):
        info = part.lstat()
        if info.st_uid != uid or stat.S_ISLNK(info.st_mode) or info.st_mode & 0o022:
            raise ConfigError(
                f"{part} must be a directory of this user's that no one else can write"
            )
    return path


URGENT_RESERVE = 5
"""Slots of each window a client's limiter keeps for urgent requests (at most half of a window
of seconds, a twentieth of a window of minutes): the prompt replays of a job POST whose answer
was lost must go before the service forgets its Idempotency-Key (a second or so, perhaps), not
after a full window of polls and POSTs. New requests see each window that much smaller: 5 a
second and 95 a minute on the paid tier, whose sustained rate the minute window sets anyway."""


class RateLimiter:
    """A thread-safe sliding-window limiter with an injectable clock and sleep.

    Share one instance between every client of the same key in a process, and give it a
    `FileLog` to share the key's windows with other processes (`machine_limiter`). `acquire`
    blocks until a request may be sent and records it as sent; `defer` holds everyone back
    after the server said to wait (429 Retry-After, maintenance). `reserve` slots of each
    window are kept for `urgent` requests (a client's limiter keeps `URGENT_RESERVE`).
    """

    def __init__(
        self,
        limits: RateLimits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        log: WindowLog | None = None,
        reserve: int = 0,
    ) -> None:
        self.limits = limits or RateLimits()
        self._clock = clock
        self._sleep = sleep
        self.log = log or MemoryLog()
        self._windows = tuple(
            (count, self.limits.spacing(seconds)) for count, seconds in self.limits.windows
        )
        if reserve < 0:
            raise OptionsError("reserve must not be negative")
        self._reserved = tuple(
            min(reserve, count // 2 if seconds <= 10 else count // 20)
            for count, seconds in self.limits.windows
        )
        """Per window, the slots only urgent requests may take: `reserve`, at most half of a
        short window (a burst's) and a twentieth of a long one (the sustained rate's)."""
        self._depth = max(count for count, _ in self._windows)
        self._longest = max(spacing for _, spacing in self._windows)
        self._stats = threading.Lock()
        self._mine = threading.local()  # the stamp of this thread's request awaiting its answer
        self._turn = threading.Condition()
        self._urgent = 0  # urgent acquires waiting: new requests wait for them to go first
        self.granted = 0
        self.waited = 0.0

    def __repr__(self) -> str:
        windows = ", ".join(f"{n}/{s:g}s" for n, s in self.limits.windows)
        return f"RateLimiter({windows})"

    def _delay(self, state: LogState, now: float, *, urgent: bool = False) -> float:
        """Seconds until one more request fits every window; 0 when it fits now. A request
        that is not `urgent` leaves each window's reserved slots free."""
        if state.sent and state.sent[-1] - now > self._longest:
            # Stamps from beyond every window ahead come from another clock (a shared log
            # left by an earlier boot of the machine): they say nothing about now.
            state.sent.clear()
            state.blocked_until = float("-inf")
        ready = state.blocked_until
        for (count, spacing), reserved in zip(self._windows, self._reserved, strict=True):
            room = count if urgent else count - reserved
            if len(state.sent) >= room:
                ready = max(ready, state.sent[-room] + spacing)
        return max(0.0, ready - now)

    def acquire(self, *, urgent: bool = False) -> float:
        """Wait until a request may be sent, record it, and return how long this call waited.

        An `urgent` request (a replay of one whose answer was lost, due at once before the
        service may forget its Idempotency-Key) takes the next slot: other requests of this
        process wait until every urgent one waiting has gone."""
        waited = 0.0
        if urgent:
            with self._turn:
                self._urgent += 1
        try:
            while True:
                if not urgent:
                    with self._turn:
                        while self._urgent:
                            self._turn.wait(1.0)
                with self.log.hold() as state:
                    now = self._clock()
                    delay = self._delay(state, now, urgent=urgent)
                    if delay <= 0:
                        # Keep the log in order even if a caller's clock stepped back.
                        stamp = max(now, state.sent[-1]) if state.sent else now
                        state.sent.append(stamp)
                        self._trim(state)
                        self._mine.stamp = stamp
                        break
                self._sleep(delay)
                waited += delay
        finally:
            if urgent:
                with self._turn:
                    self._urgent -= 1
                    self._turn.notify_all()
        with self._stats:
            self.granted += 1
            self.waited += waited
        return waited

    def answered(self) -> None:
        """Move this thread's last granted stamp to now: the request counts from its answer.

        Its stamp is found by value (equal stamps are interchangeable); one already dropped
        from the log (the log was trimmed or reset) is counted from now all the same."""
        stamp = getattr(self._mine, "stamp", None)
        if stamp is None:
            return
        self._mine.stamp = None
        with self.log.hold() as state:
            now = self._clock()
            at = bisect.bisect_left(state.sent, stamp)
            if at < len(state.sent) and state.sent[at] == stamp:
                del state.sent[at]
            bisect.insort(state.sent, max(now, stamp))
            self._trim(state)

    def _trim(self, state: LogState) -> None:
        """After a stamp was added: keep what a window needs, and no less than was there
        (another process sharing the log may keep longer windows of the same key)."""
        keep = max(self._depth, min(len(state.sent) - 1, _MAX_SLOTS))
        del state.sent[:-keep]

    def delay(self) -> float:
        """Seconds an `acquire` now would wait (0 when a request may go at once)."""
        with self.log.hold() as state:
            return self._delay(state, self._clock())

    def defer(self, seconds: float) -> None:
        """Send nothing for `seconds` from now (the server asked every client to wait)."""
        with self.log.hold() as state:
            state.blocked_until = max(state.blocked_until, self._clock() + seconds)


def machine_limiter(
    limits: RateLimits,
    *,
    ident: str,
    directory: Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    reserve: int = URGENT_RESERVE,
) -> RateLimiter:
    """A limiter whose windows every process of this machine shares when it passes the same
    `ident` (a digest naming the key and service, never the key itself)."""
    if not re.fullmatch(r"[0-9a-f]{16,128}", ident):
        raise OptionsError("ident must be a hex digest (never the key itself)")
    path = (directory or state_dir()) / f"{ident}.window"
    return RateLimiter(limits, clock=clock, sleep=sleep, log=FileLog(path), reserve=reserve)
