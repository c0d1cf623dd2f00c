"""Who carries a run out, and whether that process is still there.

A run records its owner (`runs.owner_host`, `owner_pid`) when it is opened or resumed, and a
heartbeat (`runs.heartbeat_at`) while it waits on the service. Another process deciding what to
do with an unfinished run asks `alive`: on the same host the process id says (a process that is
gone cannot beat; one still there but silent for a whole `STALE_AFTER` is taken for a reused id);
on another host (a warehouse on a shared disk) only the heartbeat can, within `LEASE`. A live
owner's run is never resumed by a second process (two processes carrying out one run would race
each other's chunks); its places are claimed and waited for. A dead owner's run passes to the
next resume.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

BEAT_EVERY = timedelta(seconds=15)
"""How often an owner writes its heartbeat while it waits (at most)."""
LEASE = timedelta(minutes=10)
"""How long a heartbeat from another host vouches for its process."""
STALE_AFTER = timedelta(hours=6)
"""A heartbeat this old is not vouched for by a process id alive on this host (ids are reused)."""


@dataclass(frozen=True)
class Owner:
    """A run's owner as recorded (host and pid may be null for runs from before migration 015)."""

    run_id: str
    status: str
    host: str | None
    pid: int | None
    heartbeat_at: datetime | None

    def alive(self, now: datetime) -> bool:
        """Whether the process carrying the run out is still there (see the module)."""
        if self.host is None or self.pid is None or self.heartbeat_at is None:
            return False
        beat = self.heartbeat_at
        if beat.tzinfo is None:
            beat = beat.replace(tzinfo=now.tzinfo)
        if self.host != this_host():
            return now - beat <= LEASE
        if self.pid == os.getpid():
            with _ACTIVE_LOCK:  # this process: alive only while a thread of it carries it out
                return self.run_id in _ACTIVE
        return _pid_alive(self.pid) and now - beat <= STALE_AFTER

    def describe(self) -> str:
        where = f"process {self.pid} on {self.host}" if self.pid is not None else "a process"
        return f"{where} (last heard from {self.heartbeat_at})"


_ACTIVE: set[str] = set()
_ACTIVE_LOCK = threading.Lock()


@contextmanager
def carrying(run_id: str) -> Iterator[None]:
    """This process carries `run_id` out for the block (an earlier invocation in the same
    process that stopped, as a crash test stops one, is not taken for a live owner)."""
    with _ACTIVE_LOCK:
        _ACTIVE.add(run_id)
    try:
        yield
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(run_id)


def this_host() -> str:
    return socket.gethostname()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: there all the same
        return True
    return True


def owner_of(con: duckdb.DuckDBPyConnection, run_id: str) -> Owner | None:
    rows = con.execute(
        "select status, owner_host, owner_pid, heartbeat_at from runs where run_id = ?", [run_id]
    ).fetchall()
    if not rows:
        return None
    status, host, pid, beat = rows[0]
    return Owner(run_id, str(status), host, None if pid is None else int(pid), beat)


def owned_now(now: datetime) -> dict[str, object]:
    """The `runs` columns that say this process carries a run out, as of `now`."""
    return {"owner_host": this_host(), "owner_pid": os.getpid(), "heartbeat_at": now}
