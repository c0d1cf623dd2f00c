"""A run's connection to the warehouse, held only while it writes.

DuckDB lets one process open a database file at a time, and a run waits on the service for
most of its life. `Writer` opens the file when a statement needs it (`con`, `execute`) and lets
it go when its thread is about to wait (`waiting`: a poll, a backoff, the rate gate, a request),
so other processes (any DuckDB client: they cannot announce themselves) read and write between
a run's writes. Letting go costs a close (a checkpoint once every thread has let go) and an
open, so it is done when it costs nothing: a wait of `soon` seconds or more lets go at once. A
wait of moments (a request that may be answered at once) puts the let-go off for `lazy` seconds,
and one idle closer lets go of every hold whose wait outlasted that: a run against a service that
answers at once lets go of the file hardly ever, and pays for one checkpoint, not one a chunk.
Where the caller sets a `stretch` (the synchronous route, whose waits are all that short when its
own work is slower than the key's rate), a wait after the file was held that long lets go at
once, and the file is opened again no sooner than `GAP` seconds later. The writer never sleeps
before work of its own (a load): only after such a let-go at a wait on the service.

Each thread has a connection of its own (a run's sender writes beside its loads: DuckDB keeps
their transactions apart). `Writer.over(con)` stands a bare connection in for a writer (tests,
in-memory work): it is never let go, and another thread is given a cursor of it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from placeflow.errors import WarehouseError
from placeflow.store.dbfile import note_holder, note_let_go
from placeflow.store.idle import IdleCloser
from placeflow.store.warehouse import (
    FILES,
    connect,
    in_transaction,
    open_database,
    transaction,
    writer_settings,
)

SOON = 0.02
"""Seconds of a wait (the rate gate's, a poll's, a backoff's) from which the run lets go of the
warehouse at once: closing the file and opening it again take less, so the wait pays for them
and readers get its whole length."""
LAZY = 0.15
"""Seconds a wait of moments (a request about to go out, the rate gate's short delay) may take
before the run lets go of the warehouse: too short a gap for a reader trying every quarter of a
second to count on, so an answer within it is recorded on the connection still open."""
STRETCH = 1.0
"""Seconds a run holds the warehouse in one stretch before it lets go at its next wait on the
service, however short, for `GAP` seconds at least: readers are kept out for this and one piece
of short work at most."""
GAP = 0.3
"""Seconds the file is left free after a stretch (the wait on the service counted in): longer
than a reader trying every quarter of a second takes between two tries. Only the part of it
that the wait did not cover delays the run, and only when its waits on the service are all
shorter than `soon` (its own work slower than the key's rate); a wait of GAP or more, or any
wait while the file is free, ends a stretch without a delay."""
WRITE_WAIT = 120.0
"""How long a run waits for readers to let go before it writes (seconds)."""


class _Hold:
    """One thread's hold of the file: its connection, how many `held` blocks keep it, and when
    its put-off let-go comes due (`idle_at`, on the closer's clock; None: not put off)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread = threading.current_thread()
        self.con: duckdb.DuckDBPyConnection | None = None
        self.held = 0
        self.idle_at: float | None = None
        self.working = False


class Writer:
    """A run's connection to the warehouse, held only while it is used (see the module's
    docstring): `con` is the calling thread's open connection (opened again after a let-go),
    `execute` a statement on it, `transaction` and `held` blocks in which it is not let go,
    `let_go` closes it now, `waiting` before the thread waits. `with` closes it."""

    def __init__(
        self,
        path: Path | str,
        *,
        wait: float = WRITE_WAIT,
        soon: float = SOON,
        lazy: float = LAZY,
        stretch: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.path = Path(path)
        self.wait = wait
        self.soon = soon
        self.lazy = lazy
        self.stretch = stretch
        """Seconds after which a wait, however short, lets go (None: only waits of `soon` s)."""
        self._clock, self._sleep = clock, sleep
        self._turn_until = 0.0
        """No thread opens the file before this (after a stretch's let-go: see GAP)."""
        self._own = threading.local()
        self._lock = threading.Lock()  # the holds, the stretch and the count of opens
        self._holds: list[_Hold] = []
        self._migrated = False
        self._closed = False
        self._since: float | None = None
        """When the current stretch began (None: none yet)."""
        self._free_since: float | None = None
        """When every thread had let go, while none holds the file (None: some thread holds it)."""
        self._closer = IdleCloser[_Hold](self._let_go_idle)
        self.opened = 0
        """How many times a connection was opened (tests, and a run's `Batch.left`)."""
        self.on_wait: Callable[[], None] | None = None
        """Called by a thread about to wait while it holds the file (a run's heartbeat)."""

    # --- the calling thread's connection ---------------------------------------------------------

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's open connection, opened again if it was let go; a let-go put
        off is called off."""
        hold = self._hold()
        with hold.lock:
            hold.idle_at = None
            con = hold.con
        return con if con is not None else self._open(hold)

    def execute(self, query: str, parameters: Any = None) -> duckdb.DuckDBPyConnection:
        """One statement on the calling thread's connection (its result read from the return)."""
        return self.con.execute(query, parameters)

    @contextmanager
    def held(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """In the block the calling thread's connection is not let go: its temporary tables
        (a run's staging) live as long as it does."""
        con = self.con
        hold = self._hold()
        hold.held += 1
        try:
            yield con
        finally:
            hold.held -= 1

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction on the calling thread's connection, held for the block (joined when
        one is open already): committed at its end, rolled back on any exception."""
        with self.held() as con, transaction(con):
            yield con

    def let_go(self) -> None:
        """Close the calling thread's connection now, unless a transaction is open on it or it
        is `held` (it opens again on next use)."""
        hold = self._hold()
        with hold.lock:
            hold.idle_at = None
            if hold.con is not None and (self._closed or self._free(hold)):
                self._forget(hold)

    def waiting(self, seconds: float) -> None:
        """The calling thread is about to wait `seconds` (0: an answer that may come at once):
        `on_wait`, then its connection is let go at once when the wait is `soon` seconds or
        longer or the stretch has lasted `stretch` seconds (then, if the file is free and the
        wait shorter than GAP, it is not opened again before GAP has passed), else once the
        wait has taken `lazy` seconds (the idle closer), unless the thread uses it before. A
        stretch runs from an open after the file was free GAP seconds in one go, across
        shorter let-goes."""
        hold = self._hold()
        if hold.con is None:
            return
        if self.on_wait is not None:
            self.on_wait()
        long = self.stretch is not None and self.held_for() >= self.stretch
        if seconds >= self.soon or long:
            self.let_go()
            with self._lock:
                if long and seconds < GAP and self._free_since is not None:
                    self._turn_until = self._free_since + GAP  # from the close's end
            return
        with hold.lock:
            if hold.con is None or not self._free(hold):
                return
            hold.idle_at = self._closer.put_off(hold, self.lazy)

    def paced(self) -> None:
        """Between two pieces of the calling thread's own long work (a plan written in parts),
        where no wait on the service comes to let readers in: once the stretch has lasted
        `stretch` seconds (STRETCH when none is set), let go, and open again no sooner than GAP
        seconds after the close."""
        hold = self._hold()
        if hold.con is None or hold.held or self.held_for() < (self.stretch or STRETCH):
            return
        self.let_go()
        with self._lock:
            if self._free_since is not None:
                self._turn_until = self._free_since + GAP

    def held_for(self) -> float:
        """Seconds the current stretch has lasted (0 once the file has been free `GAP` s)."""
        with self._lock:
            now = self._clock()
            if self._since is None or self._gap(now):
                return 0.0
            return now - self._since

    def _gap(self, now: float) -> bool:
        """Whether the file has been free `GAP` seconds in one go (the lock held)."""
        return self._free_since is not None and now - self._free_since >= GAP

    def holding(self) -> bool:
        """Whether the calling thread holds a connection."""
        return self._hold().con is not None

    @contextmanager
    def working(self) -> Iterator[None]:
        """The calling thread works beside the writer's owner (a run's sender) for the block:
        `close` leaves its connection to it, and it lets go at the block's end (closing it for
        good once the writer is closed), so its connection is closed only after it stopped;
        a let-go that frees the file after a stretch of `stretch` seconds leaves it free GAP."""
        hold = self._hold()
        hold.working = True
        try:
            yield
        finally:
            hold.working = False
            long = self.stretch is not None and self.held_for() >= self.stretch
            self.let_go()
            with self._lock:  # after a long stretch, readers get their gap (as at a wait)
                if long and self._free_since is not None:
                    self._turn_until = self._free_since + GAP

    def close(self) -> None:
        """Close every thread's connection, each under its hold's lock (as a let-go takes it),
        but those of threads still `working` (a sender finishing its request): each closes its
        own at the end of its block, so nothing is closed under a statement."""
        with self._lock:
            self._closed = True
            holds = list(self._holds)
        self._closer.stop()
        for hold in holds:
            with hold.lock:
                if hold.con is not None and not (hold.working and hold.thread.is_alive()):
                    hold.idle_at = None
                    self._forget(hold)

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def over(cls, con: duckdb.DuckDBPyConnection) -> Writer:
        """A bare connection standing in for a writer: never let go (`let_go` and `waiting` keep
        it), another thread given a cursor of its own, which `let_go` closes."""
        return _Over(con)

    # --- holds -----------------------------------------------------------------------------------

    def _hold(self) -> _Hold:
        """The calling thread's hold (made on its first use)."""
        hold: _Hold | None = getattr(self._own, "hold", None)
        if hold is None:
            hold = self._own.hold = _Hold()
            with self._lock:
                self._holds = [h for h in self._holds if h.thread.is_alive() or h.con is not None]
                self._holds.append(hold)
        return hold

    def _free(self, hold: _Hold) -> bool:
        """Whether the hold may be let go: not `held`, no transaction open (its lock held)."""
        assert hold.con is not None
        return hold.held == 0 and not in_transaction(hold.con)

    def _open(self, hold: _Hold) -> duckdb.DuckDBPyConnection:
        """Open a connection for `hold` (the first one migrates the warehouse)."""
        if self._closed and not hold.working:
            raise WarehouseError(f"the run's connection to {self.path} was closed")
        with self._lock:
            turn = self._turn_until - self._clock()
        if turn > 0:
            self._sleep(turn)  # the rest of the readers' gap its wait did not cover
        with self._lock:
            first = not self._migrated
            self._migrated = True
        if first:
            con = connect(self.path, wait=self.wait)  # creates and migrates it if need be
        else:
            con = open_database(self.path, read_only=False, wait=self.wait)
            writer_settings(con)
        with hold.lock:
            hold.con = con
        with self._lock:
            self.opened += 1
            now = self._clock()
            if self._since is None or self._gap(now) or turn > 0:
                self._since = now  # a new stretch: readers had a gap
            self._free_since = None
        note_holder(self.path)
        return con

    def _forget(self, hold: _Hold) -> None:
        """Close a hold's connection (its lock held by the caller)."""
        con, hold.con = hold.con, None
        if con is None:
            return
        with self._lock:  # said before the close as well: an open meeting the close waits
            if all(h.con is None for h in self._holds):  # its gap (`gap_taken`)
                note_let_go(self.path, closing=True)
        with FILES:  # not while another thread of this process opens the file
            con.close()  # a checkpoint of what it wrote once no other thread holds the file
        with self._lock:
            if all(h.con is None for h in self._holds):
                self._free_since = self._clock()
                note_let_go(self.path)  # another process's writer leaves readers GAP s

    def _let_go_idle(self, hold: _Hold, due: float) -> None:
        """The idle closer's let-go of a hold whose put-off let-go came due, unless its thread
        took the connection back meanwhile; after a stretch of `stretch` seconds, the file is
        then left free GAP seconds (its thread waits on the service meanwhile), as `waiting`
        leaves it: a reopen at once would give readers nothing."""
        with hold.lock:
            if hold.idle_at != due or hold.con is None:
                return
            hold.idle_at = None
            long = self.stretch is not None and self.held_for() >= self.stretch
            self._forget(hold)
        with self._lock:
            if long and self._free_since is not None:
                self._turn_until = self._free_since + GAP


class _Over(Writer):
    """A bare connection as a writer (`Writer.over`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(":memory:")
        self._base = con
        self._owner = threading.current_thread()

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        if threading.current_thread() is self._owner:
            return self._base
        hold = self._hold()
        if hold.con is None:
            hold.con = self._base.cursor()
        return hold.con

    def let_go(self) -> None:
        hold = self._hold()
        if threading.current_thread() is not self._owner and hold.con is not None:
            hold.con.close()
            hold.con = None

    def waiting(self, seconds: float) -> None:
        if self.on_wait is not None:
            self.on_wait()

    def close(self) -> None:
        self.let_go()


def workdir_for(db: Path | str, run_id: str) -> Path:
    """Where a run's verified result files live: beside the database, per run."""
    return Path(db).parent / "runs" / run_id
