"""The read side of a run's record: a chunk's row in `jobs` (`Chunk`), a stored run
(`StoredRun`), found by id or by the fingerprint of its command, and a run's chunks, requests
and holds (`RunReader`); `placeflow.state.runstate` writes them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from placeflow.errors import UnknownRun
from placeflow.options import RunOptions
from placeflow.state.records import CHUNK_COLUMNS, Chunk
from placeflow.state.records import chunk_body as plan_body
from placeflow.store.warehouse import sql_text
from placeflow.store.writer import Writer

LEDGER_KINDS = ("hold", "charge", "release", "adjustment", "possible")
"""The kinds of a `credit_ledger` entry."""


def ledger_totals(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    """A run's ledger summed by kind (each kind there, 0 when it has no entry): what it held,
    was charged, released, adjusted to the usage, and may have been charged (`possible`: lost
    answers the key's usage could not rule out), a run's as a research's."""
    rows = con.execute(
        "select kind, coalesce(sum(credits), 0) from credit_ledger where run_id = ? group by kind",
        [run_id],
    ).fetchall()
    totals = dict.fromkeys(LEDGER_KINDS, 0)
    totals.update({str(kind): int(total) for kind, total in rows})
    return totals


@dataclass(frozen=True)
class Claim:
    """The places a run left to another unfinished run buying them (`claimed`), by that run."""

    owner_run_id: str
    places: int
    answered: int
    """Answered by the owner since (an outcome of it for the place)."""
    unanswered: int
    """The owner's chunk of the place ended without an answer: the next run buys it."""
    waiting: int
    """Still to come from the owner."""
    owner_status: str | None


@dataclass(frozen=True)
class StoredRun:
    """A run as recorded: enough to resume it."""

    run_id: str
    status: str
    options: RunOptions
    inputs: tuple[str, ...]


def unfinished_run(
    con: duckdb.DuckDBPyConnection, fingerprint: str, *, also: tuple[str, ...] = ()
) -> str | None:
    """The newest run of the same command that did not finish (running or interrupted, and the
    statuses `also` names: a research goes on with a run it planned or refused), to resume
    instead of redo."""
    row = con.execute(
        "select run_id from runs where fingerprint = ? and list_contains(?, status)"
        " order by created_at desc limit 1",
        [fingerprint, ["running", "interrupted", *also]],
    ).fetchone()
    return str(row[0]) if row else None


def stored_run(con: duckdb.DuckDBPyConnection, run_id: str) -> StoredRun:
    rows = con.execute(
        "select status, options, inputs, mode from runs where run_id = ?", [run_id]
    ).fetchall()  # all: a result left unfinished would refuse the caller's next query
    row = rows[0] if rows else None
    if row is None:
        raise UnknownRun(f"no run {run_id} in this database: `placeflow runs` lists them")
    if row[3] == "research":
        raise UnknownRun(
            f"{run_id} is a research run: the same `placeflow research` command resumes it"
        )
    return StoredRun(run_id, str(row[0]), RunOptions.parse(str(row[1])), tuple(json.loads(row[2])))


class RunReader:
    """One run's rows in the warehouse, read: its chunks, their stored requests and holds.
    `db` is the run's writer (a bare connection stands in as `Writer.over(con)`); `con` is the
    calling thread's open connection, asked for at each use, since the writer lets it go
    whenever the thread waits."""

    def __init__(self, db: Writer | duckdb.DuckDBPyConnection, run_id: str) -> None:
        self.db = db if isinstance(db, Writer) else Writer.over(db)
        self.run_id = run_id

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's open connection to the warehouse (see the class's docstring)."""
        return self.db.con

    def chunks(self, *statuses: str) -> list[Chunk]:
        """The run's chunks in the given states (all when none given), in chunk order."""
        rows = self.con.execute(
            f"select {CHUNK_COLUMNS} from jobs"  # noqa: S608 - our columns
            " where run_id = ? and (len(?) = 0 or list_contains(?, status))"
            " order by chunk_no",
            [self.run_id, list(statuses), list(statuses)],
        ).fetchall()
        return [Chunk(*row) for row in rows]

    def chunk(self, chunk_no: int) -> Chunk:
        """One chunk, read by its number (not by reading them all: a 10M-row run has 1,000)."""
        rows = self.con.execute(
            f"select {CHUNK_COLUMNS} from jobs where run_id = ? and chunk_no = ?",  # noqa: S608 - our columns
            [self.run_id, chunk_no],
        ).fetchall()
        (found,) = rows
        return Chunk(*found)

    def batch_taken(self, batch_id: str, chunk_no: int) -> str | None:
        """Where the warehouse already holds `batch_id` for other places than chunk `chunk_no`
        of this run (None: nowhere): a service that answers so gave another job's id, which is
        never taken as this chunk's job."""
        row = self.con.execute(
            "select other.run_id, other.chunk_no from jobs as other, jobs as mine"
            " where mine.run_id = $run and mine.chunk_no = $chunk and other.batch_id = $batch"
            " and not (other.run_id = $run and other.chunk_no = $chunk)"
            " and other.content_sha256 is distinct from mine.content_sha256 limit 1",
            {"run": self.run_id, "chunk": chunk_no, "batch": batch_id},
        ).fetchone()
        return None if row is None else f"chunk {row[1]} of run {row[0]}"

    def chunk_of(self, batch_id: str) -> int:
        row = self.con.execute(
            "select chunk_no from jobs where run_id = ? and batch_id = ?", [self.run_id, batch_id]
        ).fetchone()
        if row is None:
            raise UnknownRun(f"job {batch_id} is not part of run {self.run_id}")
        return int(row[0])

    def chunk_requests(self, chunk_no: int) -> list[dict[str, Any]]:
        """The stored requests of a chunk, in position order."""
        rows = self.con.execute(
            "select request from run_places where run_id = ? and chunk_no = ? order by position",
            [self.run_id, chunk_no],
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def chunk_body(self, chunk_no: int) -> bytes:
        """The exact body of a job chunk, joined by DuckDB from its stored requests in position
        order: the bytes whose sha256 is the chunk's `content_sha256`. Framed as plan_body
        frames it and encoded to UTF-8 by DuckDB, so the 3 MB of a 10,000-row chunk never
        pass through a Python str."""
        row = self.con.execute(
            """select encode('{"pois":[' || string_agg(request, ',' order by position) || ']}')"""
            " from run_places where run_id = ? and chunk_no = ?",
            [self.run_id, chunk_no],
        ).fetchone()
        return bytes(row[0]) if row and row[0] is not None else plan_body([])

    def claims(self) -> list[Claim]:
        """The places this run left to other runs, by the run buying them (sql/queries/
        claims_waiting.sql)."""
        rows = self.con.execute(sql_text("queries/claims_waiting"), {"run_id": self.run_id})
        return [
            Claim(str(r), int(p), int(a), int(u), int(w), None if st is None else str(st))
            for r, p, a, u, w, st in rows.fetchall()
        ]

    def held(self, chunk_no: int) -> int:
        row = self.con.execute(
            "select coalesce(sum(credits), 0) from credit_ledger"
            " where run_id = ? and chunk_no = ? and kind = 'hold'",
            [self.run_id, chunk_no],
        ).fetchone()
        return int(row[0]) if row else 0
