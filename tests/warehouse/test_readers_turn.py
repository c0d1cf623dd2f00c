"""Readers get their turn: a new warehouse appears whole, and a writer that lets go of the file
only for moments at a time still gives readers a turn once it has held it long enough."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from placeflow.store import dbfile, writer
from placeflow.store.warehouse import connect


class Clock:
    """A clock that moves only when told (or when the writer sleeps)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_new_warehouse_is_made_aside_and_appears_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a new warehouse is migrated, its path does not exist (a reader finds no
    warehouse, never one without tables, and waits on no migration); once made it has every
    table, and nothing is left beside it."""
    path = tmp_path / "w.duckdb"
    seen: list[bool] = []
    made = dbfile.create_aside

    def watched(target: Path, build: Callable[[Path], None]) -> None:
        def build_and_look(aside: Path) -> None:
            build(aside)
            seen.append(target.exists())

        made(target, build_and_look)

    monkeypatch.setattr("placeflow.store.warehouse.create_aside", watched)
    # as a process's first new warehouse (later ones are copies of its template, linked into
    # place whole too: tests/warehouse/test_template.py)
    monkeypatch.setattr("placeflow.store.warehouse.copy_template", lambda target, make: False)
    connect(path).close()
    assert seen == [False]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb"]
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("select count(*) from runs").fetchall() == [(0,)]


def test_a_warehouse_another_process_made_meanwhile_is_kept(tmp_path: Path) -> None:
    """When another process puts a warehouse at the path while this one makes its own aside,
    the other's is kept (with what it holds) and this one's is thrown away."""
    path = tmp_path / "w.duckdb"

    def build(aside: Path) -> None:
        with duckdb.connect(str(path)) as other:  # the other process, first
            other.execute("create table mine as select 1 as x")
        duckdb.connect(str(aside)).close()

    dbfile.create_aside(path, build)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb"]
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("select x from mine").fetchall() == [(1,)]


def test_a_streak_of_short_holds_counts_whole_and_ends_in_a_readers_turn(tmp_path: Path) -> None:
    """Holds parted by let-goes shorter than READERS_TURN (a request answered in moments) are
    one streak: `release(held_over=...)` lets go once the streak, not the last hold, is that
    long, and the file is not opened again before READERS_TURN has passed; a let-go at least
    that long starts a new streak."""
    clock = Clock()
    wh = writer.Warehouse(tmp_path / "w.duckdb", clock=clock, sleep=clock.sleep)
    wh.execute("create table t (i int)")
    for i in range(4):  # four writes, 0.2 s each, let go for 0.01 s before each request
        clock.now += 0.2
        wh.execute("insert into t values (?)", [i])
        wh.release()
        clock.now += 0.01
    wh.execute("select 1")
    assert wh.held_for() == pytest.approx(0.84)
    opened = wh.opened
    wh.release(held_over=1.0)
    assert wh._con is not None  # not yet a second held
    clock.now += 0.2
    wh.release(held_over=1.0)
    assert wh._con is None and wh.held_for() == 0.0  # let go for the readers
    clock.now += 0.1
    assert wh.execute("select count(*) from t").fetchall() == [(4,)]
    assert clock.slept == [pytest.approx(writer.READERS_TURN - 0.1)]  # their turn, whole
    assert wh.opened == opened + 1
    assert wh.held_for() == 0.0  # a new streak
    wh.close()


def test_a_request_answered_in_moments_keeps_the_connection_a_slow_one_lets_it_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a request the let-go is put off (`waiting(lazily=True)`): a statement before
    `lazy` seconds have passed finds the same connection open (no close, no open); once they
    pass the connection is let go, and the next statement opens it again; inside a
    transaction nothing is let go."""
    timers: list[threading.Timer] = []

    class Timer(threading.Timer):
        def start(self) -> None:
            timers.append(self)
            super().start()

    monkeypatch.setattr(writer.threading, "Timer", Timer)
    wh = writer.Warehouse(tmp_path / "w.duckdb")
    wh.execute("create table t (i int)")
    wh.lazy = 60.0  # the answer comes first
    wh.waiting(lazily=True)
    wh.execute("insert into t values (1)")
    assert wh.opened == 1 and wh._hold().idle is None  # called off
    wh.lazy = 0.0  # the answer is slow
    wh.waiting(lazily=True)
    timers[-1].join(30)
    assert wh._con is None  # let go while the request was out
    assert wh.execute("select count(*) from t").fetchall() == [(1,)]
    assert wh.opened == 2
    wh.execute("begin transaction")
    wh.waiting(lazily=True)
    assert wh._hold().idle is None and wh._con is not None  # a transaction is never let go
    wh.execute("commit")
    wh.close()
