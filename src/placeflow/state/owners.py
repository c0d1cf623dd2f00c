"""Who carries a run out, and whether that process is still there.

A run records its owner (`runs.owner_host`, `owner_pid`) when it is opened or resumed, and a
heartbeat: in the warehouse (`runs.heartbeat_at`) while it waits on the service, and all through
the run in its lease file beside the warehouse (`placeflow.state.lease`), which a reader holding
the warehouse cannot keep it from writing. Another process deciding what to do with an
unfinished run asks `alive`: on the same host the process id says (a process that is gone cannot
beat; one still there but silent for a whole `STALE_AFTER` is taken for a reused id); on another
host (a warehouse on a shared disk, a restarted container, a renamed machine) only the newest
heartbeat can, within `LEASE` (a minute). A live owner's run is never resumed by a second process
(two processes carrying out one run would race each other's chunks); its places are claimed and
waited for. A dead owner's run passes to the next resume.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from placeflow.errors import RunInProgress
from placeflow.state.lease import BEAT_EVERY, LEASE, Lease, database_path, lease_path, read_beat

__all__ = [
    "BEAT_EVERY", "LEASE", "Owner", "carrying", "not_carried", "owned_now", "owner_of",
    "this_host",
]  # fmt: skip

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
    leased_at: datetime | None = None
    """The owner's newest beat in its lease file (None: no file, or another owner's)."""

    def last_beat(self, now: datetime) -> datetime | None:
        """The newest heartbeat, the warehouse's or the lease file's."""
        beats = [b if b.tzinfo else b.replace(tzinfo=now.tzinfo)
                 for b in (self.heartbeat_at, self.leased_at) if b is not None]  # fmt: skip
        return max(beats, default=None)

    def alive(self, now: datetime) -> bool:
        """Whether the process carrying the run out is still there (see the module)."""
        beat = self.last_beat(now)
        if self.host is None or self.pid is None or beat is None:
            return False
        if self.host != this_host():
            return now - beat <= LEASE
        if self.pid == os.getpid():
            with _ACTIVE_LOCK:  # this process: alive only while a thread of it carries it out
                return self.run_id in _ACTIVE
        return _pid_alive(self.pid) and now - beat <= STALE_AFTER

    def lease_ends(self, now: datetime) -> datetime | None:
        """When the owner's lease passes unless it beats again (another host's owner only)."""
        beat = self.last_beat(now)
        if beat is None or self.host == this_host():
            return None
        return beat + LEASE

    def describe(self) -> str:
        where = f"process {self.pid} on {self.host}" if self.pid is not None else "a process"
        beats = [b for b in (self.heartbeat_at, self.leased_at) if b is not None]
        heard = max(beats, key=lambda b: b.timestamp()) if beats else None
        return f"{where} (last heard from {heard})"


_ACTIVE: set[str] = set()
_ACTIVE_LOCK = threading.Lock()


@contextmanager
def carrying(
    run_id: str,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Iterator[None]:
    """This process carries `run_id` out for the block (an earlier invocation in the same
    process that stopped, as a crash test stops one, is not taken for a live owner); with the
    warehouse's connection `con` and the run's clock, its heartbeat beats in its lease file
    beside the warehouse all the while (`placeflow.state.lease`)."""
    with _ACTIVE_LOCK:
        _ACTIVE.add(run_id)
    db = database_path(con) if con is not None else None
    try:
        if db is None or clock is None:
            yield
        else:
            path = lease_path(db, run_id)
            with Lease(path, host=this_host(), pid=os.getpid(), clock=clock):
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
    pid = None if pid is None else int(pid)
    db = database_path(con)
    leased = read_beat(lease_path(db, run_id)) if db is not None else None
    mine = leased is not None and (leased.host, leased.pid) == (host, pid)
    return Owner(run_id, str(status), host, pid, beat, leased.at if mine and leased else None)


def owned_now(now: datetime) -> dict[str, object]:
    """The `runs` columns that say this process carries a run out, as of `now`."""
    return {"owner_host": this_host(), "owner_pid": os.getpid(), "heartbeat_at": now}


def not_carried(con: duckdb.DuckDBPyConnection, run_id: str, now: datetime) -> None:
    """Refuse (`RunInProgress`, nothing done) to take over `run_id` while a live process carries
    it out (`Owner.alive`): a second one would race it (`placeflow resume`, and research's same
    command finding its run unfinished)."""
    owner = owner_of(con, run_id)
    if owner is None or not owner.alive(now):
        return
    ends = owner.lease_ends(now)
    raise RunInProgress(
        f"run {run_id} is being carried out by {owner.describe()}: a second process would race"
        " it, so nothing was done. Wait for it to finish (`placeflow runs` shows it)"
        + (
            f"; if that process is gone, its lease passes at {ends:%H:%M:%S %Z} and a resume"
            " then carries the run on"
            if ends
            else ""
        ),
        run_id=run_id,
    )
