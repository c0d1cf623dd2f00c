"""The owner's lease beside the warehouse: beaten all through a run, read for an owner on
another host, on an injected clock (no test sleeps)."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from placeflow.state.lease import BEAT_EVERY, LEASE, Lease, lease_path, read_beat
from placeflow.state.owners import Owner, carrying, owner_of, this_host
from placeflow.store.warehouse import connect

T0 = datetime(2026, 11, 28, 8, 0, tzinfo=UTC)


def _run_row(con: duckdb.DuckDBPyConnection, run_id: str, host: str, pid: int) -> None:
    con.execute(
        "insert into runs (run_id, created_at, status, mode, attributes, include_summary,"
        " signature, inputs, options, target, owner_host, owner_pid, heartbeat_at)"
        " values (?, ?, 'running', 'validate', '', false, 'v', '[]', '{}', 'sandbox', ?, ?, ?)",
        [run_id, T0, host, pid, T0],
    )


def test_the_lease_beats_at_most_ten_seconds_apart_and_is_removed_at_the_end(
    tmp_path: Path,
) -> None:
    """Entering writes a beat at once (host, pid, the clock's time); the thread beats again
    every `every` seconds; leaving removes the file. The default beat is 10 s or less and the
    lease a minute or two."""
    assert timedelta(seconds=10) >= BEAT_EVERY and timedelta(minutes=1) <= LEASE <= timedelta(
        minutes=2
    )
    path = tmp_path / "runs" / "run_x" / "owner.lease"
    times = iter(T0 + timedelta(seconds=i) for i in range(1000))
    beats = threading.Semaphore(0)
    lease = Lease(path, host="h1", pid=42, clock=lambda: next(times), every=0.001)
    lease.on_beat = beats.release
    with lease:
        for _ in range(3):
            assert beats.acquire(timeout=30)
        beat = read_beat(path)
        assert beat is not None and (beat.host, beat.pid) == ("h1", 42) and beat.at > T0
    assert not path.exists() and lease.beats >= 3


def test_another_hosts_owner_lives_by_its_newest_beat_within_the_lease() -> None:
    """On another host only the heartbeat vouches: the newer of the warehouse's and the lease
    file's, for LEASE; past it the owner is dead and the lease's end is said."""
    old = T0 - timedelta(minutes=9)
    owner = Owner("run_x", "running", "elsewhere", 7, heartbeat_at=old, leased_at=T0)
    assert owner.alive(T0 + LEASE)
    assert not owner.alive(T0 + LEASE + timedelta(seconds=1))
    assert owner.lease_ends(T0) == T0 + LEASE
    assert not Owner("run_x", "running", "elsewhere", 7, heartbeat_at=old).alive(T0)


def test_a_reader_holding_the_warehouse_does_not_make_a_live_owner_look_dead(
    tmp_path: Path,
) -> None:
    """The warehouse's heartbeat is ten minutes old (the owner could not write it while a
    reader held the file), its lease file beat a moment ago: owner_of finds it alive; a lease
    file left by another owner of the run does not vouch for this one."""
    db = tmp_path / "wh.duckdb"
    con = connect(db)
    try:
        _run_row(con, "run_x", "elsewhere", 7)
        path = lease_path(db, "run_x")
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"host": "elsewhere", "pid": 7, "at": (T0 + timedelta(
            minutes=10)).isoformat()}))  # fmt: skip
        owner = owner_of(con, "run_x")
        assert owner is not None and owner.alive(T0 + timedelta(minutes=10, seconds=30))
        assert not owner.alive(T0 + timedelta(minutes=10) + LEASE + timedelta(seconds=1))
        path.write_text(json.dumps({"host": "third", "pid": 9, "at": T0.isoformat()}))
        owner = owner_of(con, "run_x")
        assert owner is not None and owner.leased_at is None
    finally:
        con.close()


def test_carrying_a_run_beats_its_lease_beside_the_warehouse(tmp_path: Path) -> None:
    """While this process carries a run out, its lease file says this host and pid; after, it
    is gone."""
    db = tmp_path / "wh.duckdb"
    con = connect(db)
    try:
        _run_row(con, "run_y", this_host(), os.getpid())
        with carrying("run_y", con=con, clock=lambda: T0):
            beat = read_beat(lease_path(db, "run_y"))
            assert beat is not None and (beat.host, beat.pid, beat.at) == (
                this_host(), os.getpid(), T0
            )  # fmt: skip
        assert read_beat(lease_path(db, "run_y")) is None
    finally:
        con.close()
