"""A run's connection to the warehouse, held only while it writes.

DuckDB lets one process open a database file at a time, and a run waits on the service for
most of its life: `Warehouse` opens the file when a statement needs it and lets it go whenever
its thread waits (a poll, a backoff, a request: `held_while_writing`), so other processes read
and write between a run's writes. Each thread has a connection of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import duckdb

from placeflow.warehouse import (
    FILES,
    connect,
    in_transaction,
    note_holder,
    open_database,
    writer_settings,
)

if TYPE_CHECKING:
    from placeflow.api.client import PlaceApiClient
    from placeflow.api.limiter import RateGate

READERS_TURN = 0.3
"""Seconds a writer that let go for readers (`Warehouse.release(held_over=...)`) stays away."""
WRITE_WAIT = 120.0
"""How long a run waits for readers to let go before it writes (seconds)."""


class Warehouse:
    """A run's connection to the warehouse, held only while it is used, so other processes can
    read between writes: `release()` closes it (unless a transaction is open) and the next
    statement opens it again (waiting up to `wait` s for another process). Every attribute is
    the open connection's, so it stands wherever a connection is taken; `with` closes it.

    Each thread has a connection of its own (a run's sender writes beside its loads: DuckDB
    keeps their transactions apart), and `release()` lets go of the calling thread's alone: the
    file is free for other processes once every thread has let go."""

    def __init__(self, path: Path | str, *, wait: float = WRITE_WAIT) -> None:
        self.path = Path(path)
        self.wait = wait
        self._own = threading.local()
        self._lock = threading.Lock()
        self.open_database: list[duckdb.DuckDBPyConnection] = []
        self._own.con = connect(path, wait=wait)  # migrates once
        self._own.since = time.monotonic()
        self.open_database.append(self._own.con)
        self.opened = 1
        """How many times a connection was opened (a test reads it)."""
        self.on_wait: Callable[[], None] | None = None
        """Called by a thread about to wait with the warehouse let go (a run's heartbeat)."""
        note_holder(self.path)

    @property
    def _con(self) -> duckdb.DuckDBPyConnection | None:
        """The calling thread's connection, if it holds one."""
        con: duckdb.DuckDBPyConnection | None = getattr(self._own, "con", None)
        return con

    def live(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's open connection, opened again if it was released (not before
        READERS_TURN has passed since a release made for readers: see `release`)."""
        con = self._con
        if con is None:
            turn = getattr(self._own, "readers_until", 0.0) - time.monotonic()
            if turn > 0:
                time.sleep(turn)  # the readers' turn, bounded: READERS_TURN at most
            con = open_database(self.path, read_only=False, wait=self.wait)
            writer_settings(con)
            with self._lock:
                self.open_database.append(con)
                self.opened += 1
            self._own.con = con
            self._own.since = time.monotonic()
            note_holder(self.path)
        return con

    def release(self, *, held_over: float = 0.0) -> None:
        """Close the calling thread's connection now unless a transaction is open on it or it
        is `held` (it reopens on next use); with `held_over`, only once it has been open that
        many seconds, and then not opened again for READERS_TURN seconds: a writer that never
        waits (the synchronous route, its own work slower than the key's rate) still gives
        other processes a turn that a reader trying every quarter of a second meets."""
        con = self._con
        if con is None or in_transaction(con) or getattr(self._own, "held", 0) > 0:
            return
        if held_over:
            if time.monotonic() - getattr(self._own, "since", 0.0) < held_over:
                return
            self._own.readers_until = time.monotonic() + READERS_TURN
        self._forget(con)

    def waiting(self) -> None:
        """The calling thread is about to wait: `on_wait`, then let go of its connection."""
        if self.on_wait is not None and self._con is not None:
            self.on_wait()
        self.release()

    @contextmanager
    def held(self) -> Iterator[None]:
        """In the block, the calling thread's connection is not let go (`release` does
        nothing): its temporary tables (a run's staging) live as long as the connection."""
        self._own.held = getattr(self._own, "held", 0) + 1
        try:
            yield
        finally:
            self._own.held -= 1

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            held, self.open_database = self.open_database, []
        for con in held:
            con.close()
        self._own.con = None

    def _forget(self, con: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            self.open_database = [c for c in self.open_database if c is not con]
        with FILES:  # not while another thread of this process opens the file
            con.close()
        self._own.con = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live(), name)

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def held_while_writing(wh: Warehouse, api: PlaceApiClient) -> duckdb.DuckDBPyConnection:
    """The run's connection, let go whenever the client waits (polls, backoffs) and before
    every request, so that `placeflow runs` and read-only connections of other processes can
    read between writes: a thread that waits lets go of its own connection
    (see `Warehouse`), after `wh.on_wait` (the owner's heartbeat). Letting go checkpoints what
    the thread wrote (half a second after a loaded chunk): that time comes off the wait, so a
    poll planned for when a job ends is not made late by it."""
    wait, clock = api.sleep, api.clock

    def sleep(seconds: float) -> None:
        before = clock()
        wh.waiting()
        wait(max(0.0, seconds - (clock() - before)))

    api.sleep = sleep
    api.limiter = _ReleasingGate(api.limiter, wh)
    return cast(duckdb.DuckDBPyConnection, wh)  # it stands for the connection it opens


class _ReleasingGate:
    """A rate gate that lets go of the warehouse before every request: an answer may take
    seconds (a slow service, a held connection, a 10,000-row upload), and no other process
    should wait for it to read or to write."""

    def __init__(self, gate: RateGate, wh: Warehouse) -> None:
        self._gate = gate
        self._wh = wh

    def acquire(self) -> float:
        self._wh.waiting()
        return self._gate.acquire()

    def delay(self) -> float:
        return self._gate.delay()

    def defer(self, seconds: float) -> None:
        self._gate.defer(seconds)

    def answered(self) -> None:
        self._gate.answered()


def let_go(con: duckdb.DuckDBPyConnection, *, held_over: float = 0.0) -> None:
    """Let other processes read: release a run's `Warehouse` connection of this thread when it
    has been held `held_over` seconds or more (a bare connection is kept)."""
    if isinstance(con, Warehouse):
        con.release(held_over=held_over)


def workdir_for(db: Path | str, run_id: str) -> Path:
    """Where a run's verified result files live: beside the database, per run."""
    return Path(db).parent / "runs" / run_id
