"""A run's plan written in parts before the run is recorded, so that no hold grows with its input.

Recording a run of a million places in the one transaction that also claims its places kept
readers out of the warehouse for seconds: its input rows (run_rows), rejects, matches and places
with their requests (run_places) are wide. So a larger run writes them first, in parts of
`BATCH_ROWS` rows (`Parts.write`), each one short transaction, the writer letting go between
stretches (`Writer.paced`); the run has no `runs` row meanwhile and a `run_openings` row names
it, so that every reader across runs leaves its parts out (sql/views, sql/queries, sql/checks).
The hold that records the run then writes only its `runs` row and its chunks (`jobs`), and takes
the `run_openings` row out in the same transaction: the claims (place_claims: a run's places in
its unsettled chunks) appear at once, with nothing between the check of other runs' claims and
this run's own.

A run whose opening stops before it is recorded (its plan changed meanwhile and is made again,
a budget refused it, an error) has its parts dropped on the way out (`opening`); one whose
process died (a crash, a kill) is swept by the next run that opens (`sweep`) once its owner is
gone: on this host its process id is no longer there, on another its lease file beside the
warehouse (`placeflow.state.lease`) has not beaten for `LEASE`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime

import polars as pl

from placeflow.errors import WarehouseError
from placeflow.state.lease import lease_path, read_beat
from placeflow.state.owners import Owner, carrying, this_host
from placeflow.store.warehouse import insert_frame
from placeflow.store.writer import Writer

PART_TABLES = ("run_rows", "rejects", "run_matches", "run_places")
"""The tables a run's plan is written to in parts (every row carries the run's run_id)."""


class Parts:
    """The parts of one run's plan (`write`); `begun` once the first is written."""

    def __init__(self, wh: Writer, run_id: str, clock: Callable[[], datetime]) -> None:
        self.wh, self.run_id, self.clock = wh, run_id, clock
        self.begun = False

    def begin(self) -> None:
        """Name the run in run_openings (once): its parts are hidden from then on, and its
        recording finds the name even when its plan has no rows at all."""
        if self.begun:
            return
        with self.wh.transaction() as con:
            con.execute(
                "insert into run_openings (run_id, owner_host, owner_pid, started_at)"
                " values (?, ?, ?, ?)",
                [self.run_id, this_host(), os.getpid(), self.clock()],
            )
        self.begun = True

    def write(self, table: str, frames: Iterable[pl.DataFrame]) -> int:
        """Append `frames` to `table` under the run's id (named first: `begin`), a transaction
        each, letting readers in between stretches; rows written."""
        if table not in PART_TABLES:
            raise WarehouseError(f"not a table of a run's plan: {table}")
        self.begin()
        written = 0
        with_run = pl.lit(self.run_id).alias("run_id")
        for frame in frames:
            if frame.height == 0:
                continue
            with self.wh.transaction() as con:
                written += insert_frame(con, table, frame.with_columns(with_run))
            self.wh.paced()
        return written

    def drop(self) -> None:
        """Delete the parts written so far (`drop`): they are written again from a new plan."""
        if self.begun:
            drop(self.wh, self.run_id)
        self.begun = False


@contextmanager
def opening(wh: Writer, run_id: str, *, clock: Callable[[], datetime]) -> Iterator[Parts]:
    """The block may write `run_id`'s plan in parts (`Parts.write`), carried by this process
    (`carrying`: its lease file beats meanwhile); the run's recording takes its `run_openings`
    row out (`placeflow.state.runstate.RunState.open`). On the way out, parts of a run not
    recorded by then are dropped. Openings of other processes that are gone are swept first
    (`sweep`)."""
    sweep(wh, clock())
    parts = Parts(wh, run_id, clock)
    with carrying(run_id, con=wh.con, clock=clock):
        try:
            yield parts
        finally:
            if parts.begun and still_opening(wh, run_id):
                drop(wh, run_id)


def still_opening(wh: Writer, run_id: str) -> bool:
    """Whether `run_id` is named in run_openings (not yet recorded, nor dropped)."""
    found = wh.execute("select count(*) from run_openings where run_id = ?", [run_id]).fetchall()
    return bool(found[0][0])


def drop(wh: Writer, run_id: str) -> None:
    """Delete `run_id`'s parts, a table a transaction, then its run_openings row (its parts
    stay hidden until the last is gone)."""
    for table in PART_TABLES:
        with wh.transaction() as con:
            con.execute(f"delete from {table} where run_id = ?", [run_id])  # noqa: S608 - PART_TABLES
        wh.paced()
    with wh.transaction() as con:
        con.execute("delete from run_openings where run_id = ?", [run_id])


def sweep(wh: Writer, now: datetime) -> list[str]:
    """Drop the parts of every opening whose process is gone (`Owner.alive`, its start as its
    first beat); the run ids swept."""
    rows = wh.execute(
        "select run_id, owner_host, owner_pid, started_at from run_openings order by started_at"
    ).fetchall()
    gone = [
        str(run_id)
        for run_id, host, pid, started in rows
        if not _owner(wh, str(run_id), str(host), int(pid), started).alive(now)
    ]
    for run_id in gone:
        drop(wh, run_id)
    return gone


def _owner(wh: Writer, run_id: str, host: str, pid: int, started: datetime) -> Owner:
    """The process opening `run_id` as an owner: its start, and its lease file's beat when the
    file is that process's."""
    beat = read_beat(lease_path(wh.path, run_id))
    leased = beat.at if beat is not None and (beat.host, beat.pid) == (host, pid) else None
    return Owner(run_id, "opening", host, pid, started, leased)
