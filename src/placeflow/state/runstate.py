"""The one writer of a run's state in DuckDB: `runs`, `jobs`, `run_rows`, `rejects`,
`run_places` and `credit_ledger`. Every write to those tables is a method here.

`jobs` has one row per chunk and is the write-ahead state every stage reads and moves:

    planned --POST (Idempotency-Key)--> submitted --poll--> completed|failed|cancelled|timed_out
        --download + sha256--> (file recorded) --load (one transaction)--> loaded

`credit_ledger` records what each chunk held (once, at submission), charged and released (at
load, replaced if a load is repeated). `runs` is opened with the plan in one transaction and
closed by the account stage.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import duckdb
import polars as pl

from placeflow.errors import WarehouseError
from placeflow.state.lifecycle import JOBS, NO_RESULT_FILE, UNCERTAIN, UNKNOWN_JOB, move, move_all
from placeflow.state.records import Chunk, Plan, jobs_table, plan_rows
from placeflow.state.runbook import Clock, RunBook, utc_now
from placeflow.state.runread import StoredRun, stored_run, unfinished_run
from placeflow.store.warehouse import insert_frame, transaction

__all__ = [
    "Chunk", "Clock", "RunState", "Settlement", "StoredRun", "new_run_id", "open_run",
    "record_rows", "stored_run", "unfinished_run", "utc_now",
]  # fmt: skip


def new_run_id(now: datetime, prefix: str = "run") -> str:
    """A new run's id: <prefix>_<utc timestamp>_<random hex> (rr_... for a research run)."""
    return f"{prefix}_{now.strftime('%Y%m%dT%H%M%S')}_{secrets.token_hex(3)}"


def open_run(
    state: RunState, run: dict[str, Any], plan: Plan | None, *, parts: bool = False
) -> None:
    """Record a run and its plan (see `RunState.open`): a plain function, for a step wrapper."""
    state.open(run, plan, parts=parts)


def record_rows(con: duckdb.DuckDBPyConnection, run_id: str, plan: dict[str, pl.DataFrame]) -> None:
    """Record the input rows, rejects and places of a run planned outside staging (a research
    run): `plan` holds any of run_rows, rejects and run_places (without run_id). Call it inside
    the transaction that records the run itself (`RunBook.record`)."""
    with_run = pl.lit(run_id).alias("run_id")
    for table in ("run_rows", "rejects", "run_places"):
        frame = plan.get(table)
        if frame is not None and frame.height:
            insert_frame(con, table, frame.with_columns(with_run))


@dataclass(frozen=True)
class Settlement:
    """One chunk's load as the ledger and `jobs` record it (`RunState.settled_all`): its
    outcome rows, what it charged and released (with the two entries' notes), its file, and
    why it is short (a partial file), if it is."""

    chunk_no: int
    ref: str
    rows: int
    charged: int
    released: int
    notes: tuple[str, str]
    path: str
    short: str | None


class RunState(RunBook):
    """One run's rows in the warehouse: read them (`RunReader`), write its own row and ledger
    (`RunBook`), and move its chunks on through the job lifecycle (the only writer)."""

    # --- opening ------------------------------------------------------------------------------

    def open(self, run: dict[str, Any], plan: Plan | None, *, parts: bool = False) -> None:
        """Record the run (a `runs` row's columns) and its plan in one transaction.

        The plan's rows are copied from its staging tables by DuckDB (`plan_rows`: run_rows,
        run_matches, rejects, run_places) and its chunks become `jobs`; None records a refused
        run, finished at once. With `parts`, the plan's rows were written before, in parts
        (`placeflow.state.opening`): the run and its chunks are recorded, and its run_openings
        row taken out, so its rows and claims appear together. The copy runs on every core
        (placeflow.runner.opening.EVERY_CORE) within the writer's memory cap: on one thread it
        took 13.8 s of wall time at 1M rows before the first request could go out, on two
        10.0 s (3.5 CPU s more), the peak RSS of the run unchanged.
        """
        with transaction(self.con):
            self.record(run)
            if plan is None:
                self._run(finished_at=run["created_at"])
                return
            run_id = {"run_id": self.run_id}
            if parts:
                found = self.con.execute(
                    "delete from run_openings where run_id = $run_id", run_id
                ).fetchall()
                if found[0][0] != 1:  # its parts were swept: recording it would lose its rows
                    raise WarehouseError(
                        f"run {self.run_id}'s plan, written in parts, is no longer in the"
                        " warehouse (swept as an opening whose process was gone?): nothing was"
                        " sent; run the command again"
                    )
            else:
                for table, select in plan_rows(self.con):
                    self.con.execute(
                        f"insert into {table} by name select $run_id as run_id, * from ({select})",  # noqa: S608 - our tables and statements
                        run_id,
                    )
            jobs = jobs_table(
                plan.chunks, run_id=self.run_id, kind=run["mode"], now=run["created_at"]
            )
            insert_frame(self.con, "jobs", jobs.with_columns(pl.lit(self.run_id).alias("run_id")))

    # --- moving chunks on -----------------------------------------------------------------------

    def submitted(self, chunk_no: int, *, batch_id: str, rows: int, lost: int = 0) -> bool:
        """A job was accepted: store its batch_id, and its hold once however often the POST was
        retried (`lost`: attempts whose answer was lost, added to the chunk's count). True when
        the hold was recorded now."""
        with transaction(self.con):
            self._move(
                "submitted",
                chunk_no,
                batch_id=batch_id,
                submitted_at=self.now(),
                credits_held=rows,
                error=None,
                error_code=None,
                lost_answers=self._lost(chunk_no) + lost,
            )
            if self.held(chunk_no):
                return False
            self._ledger(chunk_no, batch_id, "hold", rows, "1 credit per row held at submission")
            return True

    def lost_answers(self, chunk_no: int, lost: int) -> None:
        """`lost` more attempts of the chunk's POST lost their answer (it was not answered)."""
        if lost:
            self._move("lost_answers", chunk_no, lost_answers=self._lost(chunk_no) + lost)

    def lost_attempts(self, chunk_no: int) -> int:
        """Attempts of the chunk's POST whose answer was lost: each may have made a job."""
        return self._lost(chunk_no)

    def _lost(self, chunk_no: int) -> int:
        found = self.con.execute(
            "select coalesce(lost_answers, 0) from jobs where run_id = ? and chunk_no = ?",
            [self.run_id, chunk_no],
        ).fetchone()
        return int(found[0]) if found else 0

    def sending(self, chunk_no: int) -> None:
        """A synchronous batch is about to be sent (one found so on resume may have been
        charged: it is not re-sent blind)."""
        self._move("sending", chunk_no, submitted_at=self.now())

    def sending_job(self, chunk_no: int) -> None:
        """A job's POST is about to go out (written ahead): a resume that finds `sending_at` set
        and no batch_id knows the request may have reached the service."""
        self._move("sending_job", chunk_no, sending_at=self.now())

    def not_sent(self, chunk_no: int) -> None:
        """The POST was answered with a refusal (e.g. 402): nothing reached the service."""
        self._move("not_sent", chunk_no, sending_at=None)

    def uncertain(self, chunk_no: int, why: str, *, possible: int = 0) -> None:
        """A chunk whose request may have been charged without its answer: held, not re-sent
        blind (`--resend-uncertain` sends it again); the `possible` credits it may have cost
        are counted in possible_extra_credits the first time it is held."""
        with transaction(self.con):
            first = self.chunk(chunk_no).error_code != UNCERTAIN
            self._move("uncertain", chunk_no, error=why, error_code=UNCERTAIN)
            if possible and first:
                self._run_extra(possible)

    def awaiting_file(
        self, chunk_no: int, status: Literal["completed", "cancelled"], why: str
    ) -> None:
        """A job that ended with rows processed (so billed) and shows no result file: ended,
        not loaded, its hold kept, so a resume looks for the file again; its places are never
        sent again unless asked (`resend_held`)."""
        self._move("awaiting_file", chunk_no, status, finished_at=self.now(), error=why,
                   error_code=NO_RESULT_FILE)  # fmt: skip

    def unknown_job(self, chunk_no: int, why: str) -> None:
        """A job the service answers it does not know (submitted, or ended and not loaded):
        held in its state, so a resume looks for it again; nothing is sent again unless asked
        (`resend_held`)."""
        self._move("unknown_job", chunk_no, error=why, error_code=UNKNOWN_JOB)

    def resend_held(self, chunk_no: int, why: str) -> None:
        """A held job (`why`: the service did not know it, or its result file never showed) is
        to be sent again as a new job (the user accepted a possible double charge): planned again
        under a new Idempotency-Key, its hold kept for the new job, its rows counted as
        possible extra credits."""
        with transaction(self.con):
            key, rows, batch_id = self.con.execute(
                "select idempotency_key, rows, batch_id from jobs"
                " where run_id = ? and chunk_no = ?",
                [self.run_id, chunk_no],
            ).fetchall()[0]
            self._move(
                "resend_held",
                chunk_no,
                batch_id=None,
                sending_at=None,
                finished_at=None,
                result_path=None,
                result_sha256=None,
                result_size=None,
                idempotency_key=f"{key.split('-again-')[0]}-again-{secrets.token_hex(4)}",
                error=f"job {batch_id} {why}; sent again (--resend-uncertain)",
                error_code=None,
            )
            self._run_extra(int(rows))

    def stuck(self, chunk_no: int, why: str) -> None:
        """A job whose progress stopped moving: cancelled, its processed rows to be loaded."""
        self._move("stuck", chunk_no, finished_at=self.now(), error=why, error_code="STUCK")

    def reopened(self, chunk_no: int) -> None:
        """A synchronous batch that ended without its file on disk: to be sent again."""
        self._move("reopened", chunk_no)

    def timed_out(self, chunk_no: int, error: str) -> None:
        self._move(
            "timed_out", chunk_no, finished_at=self.now(), error=error, error_code="TIMED_OUT"
        )

    def note_error(self, chunk_no: int, error: str) -> None:
        self._move("note_error", chunk_no, error=error)

    def ended_without_result(
        self,
        chunk_no: int,
        *,
        status: str,
        ref: str,
        rows: int,
        error: str,
        error_code: str,
        why: str,
    ) -> None:
        """A job failed or was cancelled before any row: it ends, its whole hold released."""
        with transaction(self.con):
            self._move(
                "ended_without_result",
                chunk_no,
                status,
                finished_at=self.now(),
                error=error,
                error_code=error_code,
                credits_charged=0,
                credits_released=rows,
            )
            self._ledger(chunk_no, ref, "release", rows, why)

    def ended(
        self,
        chunk_no: int,
        status: Literal["completed", "cancelled"],
        *,
        error: str | None = None,
        error_code: str | None = None,
    ) -> None:
        """A job ended with results. A completed one clears an earlier timeout note; a cancelled
        one keeps its timeout's or stall's note unless given its own: a job that failed part way
        ends `cancelled` (its file a prefix of the chunk, to load) with its error, which counts
        the chunk failed once it is loaded."""
        kept = status == "cancelled" and error_code is None
        errors = {} if kept else {"error": error, "error_code": error_code}
        self._move("ended", chunk_no, status, finished_at=self.now(), **errors)

    def result_file(self, chunk_no: int, *, path: str, sha256: str, size: int) -> None:
        self._move(
            "result_file", chunk_no, result_path=path, result_sha256=sha256, result_size=size
        )

    def answered(self, chunk_no: int, *, path: str, sha256: str, size: int, extra: int) -> None:
        """A synchronous batch came back: its file is written; `extra` possible double charges."""
        self._move(
            "answered",
            chunk_no,
            finished_at=self.now(),
            batch_id=None,
            error=None,
            error_code=None,
            result_path=path,
            result_sha256=sha256,
            result_size=size,
        )
        if extra:
            self._run_extra(extra)

    def settled(
        self,
        chunk_no: int,
        *,
        ref: str,
        rows: int,
        charged: int,
        released: int,
        notes: Sequence[str],
        path: str,
        short: str | None,
        at: datetime,
    ) -> None:
        """A chunk's load: its charge and release replace any earlier load's, the chunk is
        loaded. Runs inside the load's transaction; the move first, so a refused one writes
        nothing."""
        self.settled_all(
            [Settlement(chunk_no, ref, rows, charged, released, (notes[0], notes[1]), path, short)],
            at,
        )

    def settled_all(self, settled: Sequence[Settlement], at: datetime) -> None:
        """A batch of chunks' loads, in a few set statements: each chunk loaded, its charge and
        release replacing any earlier load's. Runs inside the load's transaction; the moves
        first, so one refused writes nothing (`settled`, for one chunk)."""
        if not settled:
            return
        moves = [
            {"run_id": self.run_id, "chunk_no": s.chunk_no, "rows_loaded": s.rows,
             "credits_charged": s.charged, "credits_released": s.released, "loaded_at": at,
             "result_path": s.path, "error": s.short}
            for s in settled
        ]  # fmt: skip
        move_all(self.con, JOBS, "settled", moves, keep=("error",))
        chunks = [s.chunk_no for s in settled]
        self.con.execute(
            "delete from credit_ledger where run_id = ? and list_contains(?, chunk_no)"
            " and kind in ('charge', 'release')",
            [self.run_id, chunks],
        )
        entries = [
            (s.chunk_no, s.ref, kind, credits, note)
            for s in settled
            for kind, credits, note in (("charge", s.charged, s.notes[0]),
                                        ("release", s.released, s.notes[1]))
            if credits
        ]  # fmt: skip
        if entries:
            self.con.execute(
                "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at,"
                " note) select $run_id, unnest($chunks), unnest($refs), unnest($kinds),"
                " unnest($credits), $at, unnest($notes)",
                {
                    "run_id": self.run_id, "at": at,
                    **dict(zip(("chunks", "refs", "kinds", "credits", "notes"),
                               (list(x) for x in zip(*entries, strict=True)), strict=True)),
                },
            )  # fmt: skip

    # --- the one statement of each kind -----------------------------------------------------------

    def _move(self, name: str, chunk_no: int, to: str | None = None, **values: Any) -> None:
        """Make the lifecycle's move `name` on a chunk (`placeflow.state.lifecycle.JOBS`): its
        status set to `to` and `values` written, in one statement that holds only while the
        chunk is where the move may start; anywhere else it is refused (`IllegalMove`)."""
        move(self.con, JOBS, name, (self.run_id, chunk_no), to, **values)
