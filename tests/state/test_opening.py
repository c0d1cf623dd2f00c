"""A run's plan written in parts before it is recorded (placeflow.state.opening): its parts carry
its run_id and a run_openings row names it until it is recorded; parts of an opening that stops
are dropped on the way out, and those of a process that is gone are swept by the next opening,
never those of a live one. What is asserted is what the warehouse file holds, read by a plain
DuckDB connection after the writer closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from placeflow.errors import WarehouseError
from placeflow.state import owners
from placeflow.state.lease import LEASE, lease_path
from placeflow.state.opening import Parts, opening, sweep
from placeflow.state.owners import this_host
from placeflow.store.writer import Writer

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def rows(n: int, first: int = 0) -> pl.DataFrame:
    """`n` run_rows of rejected input rows (the table's smallest valid shape)."""
    return pl.DataFrame({
        "row_ord": range(first, first + n), "source_file": ["f.csv"] * n,
        "source_row": range(first + 1, first + n + 1), "disposition": ["rejected"] * n,
    })  # fmt: skip


def counts(db: Path) -> dict[str, object]:
    """What the file holds: run_rows per run_id, and the run_openings rows' run_ids."""
    with duckdb.connect(str(db), read_only=True) as con:
        per_run = dict(
            con.execute("select run_id, count(*) from run_rows group by run_id").fetchall()
        )
        names = [r[0] for r in con.execute("select run_id from run_openings").fetchall()]
    return {"rows": per_run, "openings": names}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "wh.duckdb"
    with Writer(path) as wh:
        wh.execute("select 1")  # created and migrated
    return path


def a_dead_pid() -> int:
    """The id of a process of this host that has ended (reaped)."""
    probe = subprocess.Popen([sys.executable, "-c", "pass"])
    probe.wait()
    return probe.pid


def plant(db: Path, run_id: str, *, host: str, pid: int, started: datetime, n: int = 3) -> None:
    """An opening as a process would have left it: its parts and its run_openings row."""
    with Writer(db) as wh:
        parts = Parts(wh, run_id, lambda: started)
        parts.write("run_rows", [rows(n)])
    with duckdb.connect(str(db)) as con:  # the owner as given, not this process
        con.execute(
            "update run_openings set owner_host = ?, owner_pid = ? where run_id = ?",
            [host, pid, run_id],
        )


def test_parts_carry_the_run_id_and_are_named_until_dropped_on_the_way_out(db: Path) -> None:
    """Parts written in two frames are one run's, named in run_openings; leaving the block
    unrecorded (an error here) drops them and the name."""
    looked: list[dict[str, object]] = []

    def stopped(wh: Writer) -> None:
        with opening(wh, "run_a", clock=clock) as parts:
            assert parts.write("run_rows", [rows(2), rows(3, first=2)]) == 5
            wh.let_go()
            looked.append(counts(db))
            raise RuntimeError("stopped")

    with Writer(db) as wh, pytest.raises(RuntimeError, match="stopped"):
        stopped(wh)
    assert looked == [{"rows": {"run_a": 5}, "openings": ["run_a"]}]
    assert counts(db) == {"rows": {}, "openings": []}


def test_a_recorded_run_keeps_its_parts(db: Path) -> None:
    """Once the run is recorded (its run_openings row taken out, as RunState.open does), the
    block's end leaves its parts in place."""
    with Writer(db) as wh, opening(wh, "run_a", clock=clock) as parts:
        parts.write("run_rows", [rows(4)])
        wh.execute("delete from run_openings where run_id = 'run_a'")
    assert counts(db) == {"rows": {"run_a": 4}, "openings": []}


def test_a_table_outside_the_plan_is_refused(db: Path) -> None:
    with (
        Writer(db) as wh,
        opening(wh, "run_a", clock=clock) as parts,
        pytest.raises(WarehouseError, match="not a table"),
    ):
        parts.write("runs", [rows(1)])


def test_an_opening_whose_process_is_gone_is_swept_by_the_next(db: Path) -> None:
    """A dead process's opening on this host is swept when the next opening begins; a live
    process's (this test's parent) is left alone, whatever its age within STALE_AFTER."""
    plant(db, "run_dead", host=this_host(), pid=a_dead_pid(), started=NOW)
    plant(db, "run_live", host=this_host(), pid=os.getppid(), started=NOW - timedelta(hours=1))
    with Writer(db) as wh, opening(wh, "run_b", clock=clock):
        pass
    assert counts(db) == {"rows": {"run_live": 3}, "openings": ["run_live"]}


def test_an_opening_on_another_host_is_swept_once_its_lease_passed(db: Path) -> None:
    """On another host only the lease can tell: an opening whose lease file beat within LEASE
    stays, one whose last beat (or, without a file, its start) is older is swept."""
    old = NOW - LEASE - timedelta(seconds=1)
    plant(db, "run_quiet", host="elsewhere", pid=1, started=old)
    plant(db, "run_beating", host="elsewhere", pid=1, started=old)
    beat = lease_path(db, "run_beating")
    beat.parent.mkdir(parents=True, exist_ok=True)
    beat.write_text(json.dumps({"host": "elsewhere", "pid": 1, "at": NOW.isoformat()}))
    plant(db, "run_young", host="elsewhere", pid=1, started=NOW - timedelta(seconds=5))
    with Writer(db) as wh:
        assert sweep(wh, NOW) == ["run_quiet"]
    assert counts(db) == {
        "rows": {"run_beating": 3, "run_young": 3},
        "openings": ["run_beating", "run_young"],
    }


def test_this_process_sweeps_an_opening_of_its_own_it_no_longer_makes(db: Path) -> None:
    """An opening of this very process (an earlier invocation stopped, as a crash test stops
    one) is swept unless this process is opening that run now."""
    plant(db, "run_mine", host=this_host(), pid=os.getpid(), started=NOW)
    with Writer(db) as wh, opening(wh, "run_now", clock=clock) as parts:
        parts.write("run_rows", [rows(1)])
        assert sweep(wh, NOW) == []  # run_now is being opened by this process
        wh.let_go()
        assert counts(db) == {"rows": {"run_now": 1}, "openings": ["run_now"]}  # run_mine swept
    assert counts(db) == {"rows": {}, "openings": []}  # run_now, not recorded: dropped


@pytest.fixture(autouse=True)
def _no_openings_left() -> Iterator[None]:
    yield
    assert not owners._ACTIVE  # every opening of the test ended
