"""A run owner's lease file beside the warehouse: its heartbeat, written all through the run.

The warehouse's own heartbeat (`runs.heartbeat_at`) can be written only while the run holds the
DuckDB file, and a reader may hold it for as long as it likes: a beat that could not be written
there must not make a live owner look dead. So the owner also beats in a small file of its own,
``runs/RUN_ID/owner.lease`` beside the warehouse (where the run's result files go), which no
reader locks: host, pid and the time, rewritten whole (a temporary file renamed over it) every
`BEAT_EVERY` by a thread of the owner's, from the moment it carries the run out until it stops.
`placeflow.state.owners` reads it for an owner on another host: a beat older than `LEASE` is
a dead owner's, whose claims pass to its resume.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType

import duckdb

from placeflow.store.writer import workdir_for

BEAT_EVERY = timedelta(seconds=5)
"""How often an owner writes its heartbeat (its lease file, and the warehouse when it waits)."""
LEASE = timedelta(seconds=60)
"""How long a heartbeat from another host vouches for its process: twelve beats, so a machine
too busy to beat for most of a minute is not taken for dead, while a dead owner's claims pass to
its resume (and an overlapping run stops waiting for them) a minute after its last beat."""
LEASE_FILE = "owner.lease"


@dataclass(frozen=True)
class Beat:
    """What a lease file says: who beat, and when."""

    host: str
    pid: int
    at: datetime


def lease_path(db: Path | str, run_id: str) -> Path:
    """The lease file of `run_id`'s owner, beside the warehouse `db`."""
    return workdir_for(db, run_id) / LEASE_FILE


def database_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The file of the connection's database (None: in memory, or not to be had)."""
    try:
        row = con.execute(
            "select path from duckdb_databases() where database_name = current_database()"
        ).fetchone()
    except duckdb.Error:
        return None
    return str(row[0]) if row and row[0] else None


def read_beat(path: Path) -> Beat | None:
    """The lease file's beat (None: no file, or not one a lease writes)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Beat(str(data["host"]), int(data["pid"]), datetime.fromisoformat(data["at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Lease:
    """The owner's heartbeat in its lease file: written at once on entry, then every `every`
    seconds by a thread until the block ends, when the file is removed (the run is no longer
    carried out by anyone). A beat that cannot be written (a full or read-only disk) is
    skipped; the next is tried all the same."""

    def __init__(
        self,
        path: Path,
        *,
        host: str,
        pid: int,
        clock: Callable[[], datetime],
        every: float = BEAT_EVERY.total_seconds(),
    ) -> None:
        self.path, self.host, self.pid, self.clock, self.every = path, host, pid, clock, every
        self.beats = 0
        """How many beats were written (a test reads it)."""
        self.on_beat: Callable[[], None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> bool:
        """Write one beat now; whether it was written."""
        body = json.dumps({"host": self.host, "pid": self.pid, "at": self.clock().isoformat()})
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            with suppress(OSError):
                tmp.unlink()
            return False
        self.beats += 1
        if self.on_beat is not None:
            self.on_beat()
        return True

    def _beating(self) -> None:
        while not self._stop.wait(self.every):
            self.beat()

    def __enter__(self) -> Lease:
        self.beat()
        self._thread = threading.Thread(target=self._beating, name="placeflow-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        mine = read_beat(self.path)
        if mine is not None and (mine.host, mine.pid) == (self.host, self.pid):
            with suppress(OSError):
                self.path.unlink()
