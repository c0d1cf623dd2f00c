"""One key's windows shared by every process of the machine: a file log under a kernel lock."""

from __future__ import annotations

import fcntl
import hashlib
import multiprocessing
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.limiter import FileLog, RateLimiter, machine_limiter
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.fields import RateLimits
from placeflow.runner.target import Target, shared_limiter
from placeflow.support.redact import Secret

from .conftest import KEY, FakeTime
from .test_limiter import grant_times, max_in_window

IDENT = hashlib.sha256(b"https://api.places.test|" + KEY.encode()).hexdigest()
LOOPBACK_LIMITS = RateLimits.for_tier("free", window_scale=0.05, min_slack=0.15)
"""The sandbox's free tier at a twentieth (5 per 50 ms, 10 per 3 s); 150 ms of slack, as an
arrival can lag its send by over 100 ms on two busy cores."""

REAL_TIME = pytest.mark.slow
"""Two real processes against the sandbox's real-time windows (5 per 50 ms): on a loaded machine
(the default suite's parallel workers) an arrival can lag its send past any slack, so these run
in the slow suite; the default suite holds the shared file log to its windows under an injected
clock (test_two_limiters_on_one_file_keep_the_windows_together, test_defer_reaches_...)."""

SPAWN = multiprocessing.get_context("spawn")
"""Workers started from a fresh interpreter (each opens the log itself; `hammer` is imported).
Not forked: a child forked from this worker inherits what the suite's earlier tests left in it
(Prefect's services and their exit hooks, the sandbox's threads). Forked after a flow had run,
each child sent its requests and then exited 1 without a word: multiprocessing's fork bootstrap
runs the `threading` exit hooks, Prefect 3.8.8's after-fork reset of its QueueService clears the
service's `_done_event` while its hook stays registered, the hook's `drain` then fails
`assert self._done_event is not None`, and `popen_fork` turns that into `os._exit(1)`."""


def hammer(base_url: str, directory: Path, shared: bool, n: int, ready: Any, go: Any) -> None:
    """A worker process: one client of the key sending `n` GET /v1/usage once `go` is set."""
    limiter = (
        machine_limiter(LOOPBACK_LIMITS, ident=IDENT, directory=directory, reserve=0)
        if shared
        else RateLimiter(LOOPBACK_LIMITS)
    )
    with PlaceApiClient(base_url=base_url, api_key=KEY, limiter=limiter, timeout=10.0) as client:
        ready.set()
        if not go.wait(60):
            raise SystemExit(3)
        for _ in range(n):
            client.usage()


@pytest.fixture
def sandbox() -> Iterator[tuple[Sandbox, str]]:
    """A sandbox on loopback whose one free key has its windows scaled to a twentieth."""
    box = Sandbox(
        SandboxConfig(keys=(KeySpec(key=KEY, tier="free", credits=10),), rate_window_scale=0.05)
    )
    with box.serve() as served:
        yield box, served.base_url


def run_two_processes(base_url: str, directory: Path, *, shared: bool, n: int) -> None:
    """Two processes on one key, released together, each sending `n` GET /v1/usage."""
    go = SPAWN.Event()
    readies = [SPAWN.Event() for _ in range(2)]
    procs = [
        SPAWN.Process(target=hammer, args=(base_url, directory, shared, n, ready, go))
        for ready in readies
    ]
    for p in procs:
        p.start()
    try:
        assert all(ready.wait(60) for ready in readies)
        go.set()
        for p in procs:
            p.join(120)
            assert p.exitcode == 0
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
            p.close()


@REAL_TIME
def test_two_processes_sharing_a_file_log_get_no_429(
    sandbox: tuple[Sandbox, str], tmp_path: Path
) -> None:
    """Two processes on one key through one file log: 0 responses 429 as the sandbox counts them,
    and its windows were filled, never passed."""
    box, base_url = sandbox
    run_two_processes(base_url, tmp_path, shared=True, n=8)
    key = box.stats()["keys"][KEY]
    assert box.stats()["requests"]["GET /v1/usage"] == {"200": 16}
    assert key["rate_limited"] == 0
    assert key["peak_per_second"] <= 5
    assert key["peak_per_minute"] == 10  # the long window was reached, never passed


@REAL_TIME
def test_two_processes_with_their_own_limiters_get_429(
    sandbox: tuple[Sandbox, str], tmp_path: Path
) -> None:
    """The control: the same two processes, each with a limiter of its own, overrun the key
    (16 requests in well under the 3 s window that allows 10)."""
    box, base_url = sandbox
    run_two_processes(base_url, tmp_path, shared=False, n=8)
    assert box.stats()["keys"][KEY]["rate_limited"] > 0


def test_two_limiters_on_one_file_keep_the_windows_together(tmp_path: Path) -> None:
    """Two limiters (two open files, as two processes have) alternate grants under one clock:
    together they never pass 10 per second or 100 per minute."""
    fake = FakeTime(0.0)
    limits = RateLimits.for_tier("paid")
    a, b = (
        machine_limiter(
            limits, ident=IDENT, directory=tmp_path, clock=fake.clock, sleep=fake.sleep, reserve=0
        )
        for _ in range(2)
    )
    times = []
    for _ in range(125):
        times += grant_times(a, fake, 1) + grant_times(b, fake, 1)
    assert max_in_window(times, 1.0) == 10
    assert max_in_window(times, 60.0) == 100
    assert b.delay() == a.delay() > 0


def test_defer_reaches_every_limiter_of_the_file(tmp_path: Path) -> None:
    """A 429's Retry-After seen by one process holds back the others."""
    fake = FakeTime(0.0)
    a, b = (
        machine_limiter(
            RateLimits(), ident=IDENT, directory=tmp_path, clock=fake.clock, sleep=fake.sleep
        )
        for _ in range(2)
    )
    a.defer(2.0)
    assert b.delay() == pytest.approx(2.0)
    b.acquire()
    assert fake.now == pytest.approx(2.0)


def test_a_process_killed_holding_the_lock_lets_it_go(tmp_path: Path) -> None:
    """A process killed while it holds the file's lock releases it: the next acquire proceeds."""
    limiter = machine_limiter(RateLimits(), ident=IDENT, directory=tmp_path)
    assert isinstance(limiter.log, FileLog)
    script = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
        " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, str(limiter.log.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            fd = os.open(limiter.log.path, os.O_RDWR)
            try:
                with pytest.raises(BlockingIOError):  # really held by the other process
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
        finally:
            holder.kill()
            holder.wait(timeout=30)
    worker = threading.Thread(target=limiter.acquire, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert limiter.granted == 1


def test_stamps_from_another_boot_are_forgotten(tmp_path: Path) -> None:
    """A log whose stamps lie further ahead than any window (left by an earlier boot, whose
    monotonic clock ran further) does not hold anyone back."""
    path = tmp_path / f"{IDENT}.window"
    path.write_bytes(struct.pack("<11d", float("-inf"), *([1e9] * 10)))
    fake = FakeTime(5.0)
    limiter = machine_limiter(
        RateLimits(), ident=IDENT, directory=tmp_path, clock=fake.clock, sleep=fake.sleep
    )
    assert limiter.acquire() == 0.0
    assert struct.unpack("<2d", path.read_bytes()) == (float("-inf"), 5.0)


def test_a_torn_tail_is_ignored(tmp_path: Path) -> None:
    """A file whose length is not a whole number of stamps is read up to its last whole one."""
    path = tmp_path / f"{IDENT}.window"
    path.write_bytes(struct.pack("<2d", float("-inf"), 1.0) + b"\x00\x01\x02")
    fake = FakeTime(1.0)
    limits = RateLimits(windows=((1, 1.0),))
    limiter = machine_limiter(limits, ident=IDENT, directory=tmp_path, clock=fake.clock)
    assert limiter.delay() == pytest.approx(1.05)


def test_the_file_names_a_digest_and_only_its_owner_can_read_it(tmp_path: Path) -> None:
    """The log's name is the digest, its mode 0600; an ident that is not a digest is refused."""
    limiter = machine_limiter(RateLimits(), ident=IDENT, directory=tmp_path)
    limiter.acquire()
    (path,) = tmp_path.iterdir()
    assert path.name == f"{IDENT}.window"
    assert path.stat().st_mode & 0o777 == 0o600
    assert KEY not in path.read_bytes().decode("latin-1")
    with pytest.raises(ValueError, match="digest"):
        machine_limiter(RateLimits(), ident=KEY, directory=tmp_path)


def test_memory_log_stays_the_default() -> None:
    """A limiter without a log keeps its windows to itself (the in-process behaviour)."""
    fake = FakeTime(0.0)
    limits = RateLimits(windows=((1, 1.0),))
    a = RateLimiter(limits, clock=fake.clock, sleep=fake.sleep)
    b = RateLimiter(limits, clock=fake.clock, sleep=fake.sleep)
    a.acquire()
    assert b.delay() == 0.0


def test_shared_limiter_is_one_per_key_and_service() -> None:
    """Targets on the same key and service share one limiter and file; another key has its own."""

    def target(key: str) -> Target:
        return Target(
            base_url="https://api.places.test",
            api_key=Secret(key),
            label="test",
            limits=RateLimits(),
        )

    one, again, other = (shared_limiter(target(k)) for k in (KEY, KEY, KEY + "x"))
    assert one is again and one is not other
    assert isinstance(one.log, FileLog) and isinstance(other.log, FileLog)
    assert one.log.path.name == f"{IDENT}.window"
    assert one.log.path.parent.stat().st_mode & 0o777 == 0o700
    assert KEY not in str(one.log.path)
