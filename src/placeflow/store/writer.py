"""A run's connection to the warehouse, held only while it writes.

DuckDB lets one process open a database file at a time, and a run waits on the service for
most of its life: `Warehouse` opens the file when a statement needs it and lets it go whenever
its thread waits (a poll, a backoff, a request that is not answered in moments:
`held_while_writing`), so other processes read and write between a run's writes. A writer that
never waits long gives readers a turn once it has held the file a while
(`Warehouse.release(held_over=...)`). Each thread has a connection of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import duckdb

from placeflow.store.dbfile import note_holder
from placeflow.store.warehouse import (
    FILES,
    connect,
    in_transaction,
    open_database,
    writer_settings,
)

if TYPE_CHECKING:
    from placeflow.api.client import PlaceApiClient
    from placeflow.api.limiter import RateGate

READERS_TURN = 0.5
"""Seconds a writer that let go for readers (`Warehouse.release(held_over=...)`) stays away:
longer than a reader trying every quarter of a second takes between two tries on a busy
machine (its own refused try included), so that it meets the turn."""
LAZY = 0.15
"""Seconds a request may take before the run lets go of the warehouse it holds
(`Warehouse.waiting(lazily=True)`): too short a gap for a reader trying every quarter of a
second to count on, so an answer within it is recorded on the connection still open."""
WRITE_WAIT = 120.0
"""How long a run waits for readers to let go before it writes (seconds)."""


class _Hold:
    """One thread's hold of the file: its connection, how many `held` blocks keep it, and the
    let-go put off while a request is answered (`idle`: the timer that makes it, if due)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.con: duckdb.DuckDBPyConnection | None = None
        self.held = 0
        self.idle: threading.Timer | None = None


class Warehouse:
    """A run's connection to the warehouse, held only while it is used, so other processes can
    read between writes: `release()` closes it (unless a transaction is open) and the next
    statement opens it again (waiting up to `wait` s for another process). Every attribute is
    the open connection's, so it stands wherever a connection is taken; `with` closes it.

    Each thread has a connection of its own (a run's sender writes beside its loads: DuckDB
    keeps their transactions apart), and `release()` lets go of the calling thread's alone: the
    file is free for other processes once every thread has let go.

    How long the file has been held is counted over a *streak*: from the open that took it
    after it had been free READERS_TURN seconds or more (a reader trying every quarter of a
    second had its turn), across every shorter let-go since (a request of a few milliseconds
    is no turn for a reader, however often it comes). `release(held_over=...)` measures that.

    Before a request the let-go may be put off (`waiting(lazily=True)`): a timer lets go of the
    thread's connection once the answer has taken `lazy` seconds; an answer within them is
    recorded on the same connection, sparing a close (a checkpoint) and an open, which were
    two fifths of a synchronous batch's work."""

    def __init__(
        self,
        path: Path | str,
        *,
        wait: float = WRITE_WAIT,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.path = Path(path)
        self.wait = wait
        self.lazy = LAZY
        self._clock, self._sleep = clock, sleep  # the streak's and the readers' turn's
        self._own = threading.local()
        self._lock = threading.Lock()
        self._holds: list[_Hold] = []
        self.open_database: list[duckdb.DuckDBPyConnection] = []
        hold = self._hold()
        hold.con = connect(path, wait=wait)  # migrates once
        self.open_database.append(hold.con)
        self.opened = 1
        """How many times a connection was opened (a test reads it)."""
        self._streak_since = clock()
        """When the file was last taken after a readers' turn (see the class's docstring)."""
        self._free_since: float | None = None
        """When every thread had let go, while none holds it (None: some thread holds it)."""
        self._readers_until = 0.0
        """Until when no thread opens the file again: the turn `release(held_over=...)` gave."""
        self.on_wait: Callable[[], None] | None = None
        """Called by a thread about to wait with the warehouse let go (a run's heartbeat)."""
        note_holder(self.path)

    def _hold(self) -> _Hold:
        """The calling thread's hold (made on its first use)."""
        hold: _Hold | None = getattr(self._own, "hold", None)
        if hold is None:
            hold = self._own.hold = _Hold()
            with self._lock:
                self._holds.append(hold)
        return hold

    @property
    def _con(self) -> duckdb.DuckDBPyConnection | None:
        """The calling thread's connection, if it holds one."""
        return self._hold().con

    def live(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's open connection, opened again if it was released (not before
        READERS_TURN has passed since a release made for readers: see `release`); a let-go
        put off is called off."""
        hold = self._hold()
        con = self._kept(hold)
        if con is None:
            with self._lock:
                turn = self._readers_until - self._clock()
            if turn > 0:
                self._sleep(turn)  # the readers' turn, bounded: READERS_TURN at most
            con = open_database(self.path, read_only=False, wait=self.wait)
            writer_settings(con)
            with self._lock:
                self.open_database.append(con)
                self.opened += 1
                now = self._clock()
                if self._free_since is not None and now - self._free_since >= READERS_TURN:
                    self._streak_since = now  # readers had their turn: a new streak
                self._free_since = None
            hold.con = con
            note_holder(self.path)
        return con

    def held_for(self) -> float:
        """Seconds the file has been held in the current streak (0 while it is free)."""
        with self._lock:
            return 0.0 if self._free_since is not None else self._clock() - self._streak_since

    def release(self, *, held_over: float = 0.0) -> None:
        """Close the calling thread's connection now unless a transaction is open on it or it
        is `held` (it reopens on next use); with `held_over`, only once the file has been held
        that many seconds in its streak, and then no thread opens it again for READERS_TURN
        seconds: a writer that never waits long (the synchronous route, its requests answered
        in moments, its own work slower than the key's rate) still gives other processes a
        turn that a reader trying every quarter of a second meets."""
        if held_over and self.held_for() < held_over:
            return
        hold = self._hold()
        con = self._kept(hold)
        if con is None or hold.held > 0 or in_transaction(con):
            return
        self._forget(hold)
        if held_over:  # counted from the close's end: the checkpoint holds the file till then
            with self._lock:
                self._readers_until = self._clock() + READERS_TURN

    def waiting(self, *, lazily: bool = False) -> None:
        """The calling thread is about to wait: `on_wait`, then let go of its connection; with
        `lazily` (a request expected to be answered in moments), only once the wait has taken
        `lazy` seconds, unless the thread uses the connection again before."""
        hold = self._hold()
        if self.on_wait is not None and hold.con is not None:
            self.on_wait()
        if not lazily:
            self.release()
            return
        con = self._kept(hold)
        if con is None or hold.held > 0 or in_transaction(con):
            return
        timer = threading.Timer(self.lazy, self._let_go_idle, args=(hold,))
        timer.daemon = True
        with hold.lock:
            hold.idle = timer
        timer.start()

    @contextmanager
    def held(self) -> Iterator[None]:
        """In the block, the calling thread's connection is not let go (`release` does
        nothing): its temporary tables (a run's staging) live as long as the connection."""
        hold = self._hold()
        self._kept(hold)  # a let-go put off is called off too
        hold.held += 1
        try:
            yield
        finally:
            hold.held -= 1

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            holds = list(self._holds)
            self.open_database = []
        for hold in holds:
            with hold.lock:
                idle, hold.idle = hold.idle, None
                con, hold.con = hold.con, None
            if idle is not None:
                idle.cancel()
            if con is not None:
                con.close()
        with self._lock:
            self._free_since = self._clock()

    def _kept(self, hold: _Hold) -> duckdb.DuckDBPyConnection | None:
        """The thread's connection, its let-go put off called off (if its timer has not let
        go of it already: then None)."""
        with hold.lock:
            idle, hold.idle = hold.idle, None
            con = hold.con
        if idle is not None:
            idle.cancel()  # once past this lock, it finds itself called off and does nothing
        return con

    def _let_go_idle(self, hold: _Hold) -> None:
        """The timer of a let-go put off: the thread is still waiting for its answer (it has
        not used the connection since), so its connection is let go now."""
        with hold.lock:
            if hold.idle is not threading.current_thread() or hold.con is None:
                return  # called off: the thread took its connection back
            hold.idle = None
            self._forget(hold)

    def _forget(self, hold: _Hold) -> None:
        """Close a hold's connection (by its thread, or by its timer under its lock)."""
        con = hold.con
        if con is None:
            return
        with self._lock:
            self.open_database = [c for c in self.open_database if c is not con]
        with FILES:  # not while another thread of this process opens the file
            con.close()  # a checkpoint of what it wrote: the file is held until it returns
        hold.con = None
        with self._lock:
            if not self.open_database:
                self._free_since = self._clock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live(), name)

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def held_while_writing(wh: Warehouse, api: PlaceApiClient) -> duckdb.DuckDBPyConnection:
    """The run's connection, let go whenever the client waits (polls, backoffs) and before
    every request (once the answer has taken `wh.lazy` seconds, unless the rate gate says at
    once that it will wait longer), so that `placeflow runs` and read-only connections of other
    processes can read between writes: a thread that waits lets go of its own connection
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
    should wait for it to read or to write. The let-go is put off for `wh.lazy` seconds
    (`Warehouse.waiting`) unless the gate itself is to wait longer."""

    def __init__(self, gate: RateGate, wh: Warehouse) -> None:
        self._gate = gate
        self._wh = wh

    def acquire(self, *, urgent: bool = False) -> float:
        self._wh.waiting(lazily=self._gate.delay() < self._wh.lazy)  # a long wait: at once
        return self._gate.acquire(urgent=urgent)

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
