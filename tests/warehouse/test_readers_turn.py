"""Readers get their turn: a new warehouse appears whole, and the writer lets go of the file
when its run waits, at once after a long stretch, never sleeping for it."""

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


def test_a_long_stretch_ends_at_a_wait_with_a_gap_for_readers(tmp_path: Path) -> None:
    """A wait of moments puts the let-go off while the stretch is under `stretch` seconds; once
    it is that long, the next wait on the service lets go at once, however short, and the file
    is opened again only GAP seconds after (the wait counted in): a new stretch. Work of the
    writer's own is never delayed: only an open after such a let-go waits."""
    clock = Clock()
    wh = writer.Writer(
        tmp_path / "w.duckdb", clock=clock, sleep=clock.sleep, lazy=60.0, stretch=1.0
    )
    wh.execute("create table t (i int)")
    for i in range(4):  # four writes, 0.2 s each, a request answered in moments after each
        clock.now += 0.2
        wh.execute("insert into t values (?)", [i])
        wh.waiting(0.0)
    assert wh.holding() and wh.held_for() == pytest.approx(0.8)
    assert clock.slept == []
    clock.now += 0.2
    wh.waiting(0.0)
    assert not wh.holding()  # let go: the stretch was a second
    clock.now += 0.05  # the answer, in moments
    assert wh.execute("select count(*) from t").fetchall() == [(4,)]
    assert clock.slept == [pytest.approx(writer.GAP - 0.05)]  # the rest of the gap
    assert wh.held_for() == 0.0  # a new stretch
    wh.waiting(0.0)
    assert wh.holding() and wh.opened == 2  # put off again
    clock.now += 1.0
    wh.waiting(writer.GAP)  # a wait as long as a gap: no delay after it
    wh.execute("select 1")
    assert len(clock.slept) == 1
    wh.close()


def test_a_request_answered_in_moments_keeps_the_connection_a_slow_one_lets_it_go(
    tmp_path: Path,
) -> None:
    """Before a request the let-go is put off (`waiting(0.0)`): a statement before `lazy`
    seconds have passed finds the same connection open (no close, no open); once they pass,
    the one idle closer lets go of it, and the next statement opens it again; inside a
    transaction nothing is let go."""
    wh = writer.Writer(tmp_path / "w.duckdb", lazy=60.0)  # the answer comes first
    wh.execute("create table t (i int)")
    wh.waiting(0.0)
    wh.execute("insert into t values (1)")
    assert wh.opened == 1 and wh._hold().idle_at is None  # called off
    wh.lazy = 0.001  # the answer is slow
    wh.waiting(0.0)
    assert wh._closer.let_went.wait(30)
    assert not wh.holding()  # let go while the request was out
    assert wh.execute("select count(*) from t").fetchall() == [(1,)]
    assert wh.opened == 2
    with wh.transaction():
        wh.waiting(0.0)
        assert wh._hold().idle_at is None and wh.holding()  # a transaction is never let go
    wh.close()


def test_a_close_leaves_a_working_thread_its_connection_until_it_stops(tmp_path: Path) -> None:
    """`close` closes the caller's connection under its hold's lock but leaves a thread still
    `working` (a run's sender finishing its request) its own: that thread writes on after the
    close, and its connection is closed when its block ends."""
    wh = writer.Writer(tmp_path / "w.duckdb")
    wh.execute("create table t (i int)")
    inside, closed, done = threading.Event(), threading.Event(), threading.Event()

    def sender() -> None:
        with wh.working():
            wh.execute("insert into t values (1)")
            inside.set()
            closed.wait(30)
            wh.execute("insert into t values (2)")  # its answer, recorded after the close
        done.set()

    thread = threading.Thread(target=sender)
    thread.start()
    assert inside.wait(30)
    wh.close()
    closed.set()
    assert done.wait(30)
    thread.join(30)
    assert not wh.holding()
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as reader:
        assert reader.execute("select i from t order by i").fetchall() == [(1,), (2,)]


def test_a_writer_opens_only_after_the_gap_another_process_let_go_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's let-go is noted beside the file; another process's writer opening it then
    first sleeps out the readers' gap left of it, a reader does not, and the note of this
    process's own let-go is no wait (its writer keeps its own gap)."""
    db = tmp_path / "w.duckdb"
    connect(db).close()
    clock = Clock()  # the notes' wall clock, moved only by the sleeps
    monkeypatch.setattr(dbfile, "time", clock_module(clock))
    wh = writer.Writer(db)
    wh.execute("select 1")
    wh.let_go()
    note = (tmp_path / "w.duckdb.free").read_text().split()
    assert note == ["100.000000", str(dbfile.os.getpid()), "free"]
    assert dbfile.wait_for_gap(db) == 100.0 and clock.slept == []  # this process's own
    (tmp_path / "w.duckdb.free").write_text(f"99.900 {dbfile.os.getpid() + 1} free")  # another's
    with duckdb.connect(str(db), read_only=True):  # a reader: no wait
        pass
    connect(db, read_only=True).close()
    assert clock.slept == []
    connect(db).close()  # a writer: the rest of the gap first
    assert clock.slept == [pytest.approx(dbfile.READERS_GAP - 0.1)]
    assert dbfile.gap_taken(db, 99.0)  # an open begun before that let-go took its gap
    assert not dbfile.gap_taken(db, 100.0)


def clock_module(clock: Clock) -> object:
    """A stand-in for the `time` module of `placeflow.store.dbfile`: `clock`'s time and sleep."""

    class Time:
        time = staticmethod(clock)
        sleep = staticmethod(clock.sleep)

    return Time


def test_a_writer_waits_for_another_process_s_close_before_its_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A let-go noted as closing (its checkpoint under way) is waited out until it is noted
    done, and the readers' gap counted from that; a close never noted done is waited for
    CLOSE_WAIT seconds at most."""
    db, note = tmp_path / "w.duckdb", tmp_path / "w.duckdb.free"
    clock = Clock()
    other = dbfile.os.getpid() + 1
    note.write_text(f"100.000 {other} closing")

    def close_ends(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 3:  # its close ends 0.06 s on
            note.write_text(f"{clock.now:.3f} {other} free")

    class Time:
        time = staticmethod(clock)
        sleep = staticmethod(close_ends)

    monkeypatch.setattr(dbfile, "time", Time)
    assert dbfile.wait_for_gap(db) == pytest.approx(100.06 + dbfile.READERS_GAP)
    note.write_text(f"{clock.now:.3f} {other} closing")  # a close never said done
    began = clock.now
    assert dbfile.wait_for_gap(db) == pytest.approx(began + dbfile.CLOSE_WAIT, abs=0.03)


def test_the_let_go_note_is_replaced_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A let-go's note is written aside and put in place whole: another process's writer
    polling it meanwhile reads the last note until the new one is there, never an empty or
    half-written one (which it would take for no note, and open in the readers' gap); nothing
    is left beside it."""
    db, note = tmp_path / "w.duckdb", tmp_path / "w.duckdb.free"
    other = dbfile.os.getpid() + 1
    note.write_text(f"99.000 {other} closing")
    seen: list[str] = []
    replace = dbfile.os.replace

    def watched(src: str, dst: str) -> None:
        seen.append(note.read_text())  # what a poller reads until the note is replaced
        replace(src, dst)

    monkeypatch.setattr(dbfile.os, "replace", watched)
    dbfile.note_let_go(db)
    assert seen == [f"99.000 {other} closing"]
    assert note.read_text().split()[1:] == [str(dbfile.os.getpid()), "free"]
    assert [p.name for p in tmp_path.iterdir()] == ["w.duckdb.free"]


def test_an_idle_let_go_after_a_long_stretch_leaves_readers_their_gap(tmp_path: Path) -> None:
    """A let-go put off at a wait of moments that comes due once the stretch has lasted
    `stretch` seconds (the idle closer's, here called as it calls it) leaves the file free GAP
    seconds: the next open waits out the rest of it, not opening at once into readers' turn;
    one due within the stretch does not."""
    clock = Clock()
    wh = writer.Writer(
        tmp_path / "w.duckdb", clock=clock, sleep=clock.sleep, lazy=60.0, stretch=1.0
    )
    wh.execute("select 1")
    clock.now += 0.5
    wh.waiting(0.0)  # put off: the stretch is half a second
    hold = wh._hold()
    wh._let_go_idle(hold, hold.idle_at or 0.0)  # due within the stretch
    clock.now += 0.1
    wh.execute("select 1")
    assert clock.slept == [] and wh.held_for() == pytest.approx(0.6)
    clock.now += 0.3
    wh.waiting(0.0)  # put off again: 0.9 s
    clock.now += 0.2  # due once the stretch has lasted a second and more
    wh._let_go_idle(hold, hold.idle_at or 0.0)
    clock.now += 0.05
    wh.execute("select 1")
    assert clock.slept == [pytest.approx(writer.GAP - 0.05)] and wh.held_for() == 0.0
    wh.close()


def test_a_sender_s_let_go_after_a_long_stretch_leaves_readers_their_gap(
    tmp_path: Path,
) -> None:
    """When a thread working beside the run (its sender) ends its block and so frees the file
    after the stretch has lasted `stretch` seconds, the next open waits out the rest of GAP:
    the run's own thread does not take the file back at once into readers' turn."""
    clock = Clock()
    wh = writer.Writer(
        tmp_path / "w.duckdb", clock=clock, sleep=clock.sleep, lazy=60.0, stretch=1.0
    )

    def sender() -> None:
        with wh.working():
            wh.execute("select 1")
            clock.now += 1.1  # its request and its writes: past the stretch

    worker = threading.Thread(target=sender)
    worker.start()
    worker.join()
    assert not wh.holding()
    clock.now += 0.05
    wh.execute("select 1")  # the run's thread, back from its wait
    assert clock.slept == [pytest.approx(writer.GAP - 0.05)]
    wh.close()
