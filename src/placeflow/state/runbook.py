"""A run's own row (`runs`) and its credit ledger (`credit_ledger`), written: the run-level
half of `placeflow.state.runstate.RunState` (which adds the chunks and their lifecycle). Who
carries the run out and its heartbeat (`placeflow.state.owners`), its stop and its close, the
ledger's entries and what the service was seen to bill.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import duckdb

from placeflow.errors import IllegalMove
from placeflow.state.lifecycle import RUN_OPENS, RUNS, move
from placeflow.state.owners import BEAT_EVERY, owned_now
from placeflow.state.runread import RunReader
from placeflow.store.warehouse import transaction
from placeflow.store.writer import Writer

Clock = Callable[[], datetime]
LedgerKind = Literal["hold", "charge", "release", "adjustment", "possible"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def run_row(
    started: datetime,
    *,
    status: str,
    mode: str,
    signature: str,
    options: str,
    inputs: Sequence[str],
    target: str,
    key_hint: str | None,
    fingerprint: str,
    credits_estimated: int,
    counts: Mapping[str, int],
    message: str | None = None,
    **kind: Any,
) -> dict[str, Any]:
    """A new run's row in `runs` (its columns, for `RunBook.record`), a run's as a research's:
    when it started (its reading and dedupe counted: one time), its status, mode, signature,
    options as stored (JSON), inputs, target and key, the fingerprint an unfinished one is found
    by, its estimate, its counts (rows_read, rejected, duplicates, skipped_fresh, submitted,
    ...) and why it was refused; `kind` adds its kind's own columns (a run's attributes, a
    research's fields and rates)."""
    return {
        "created_at": started, "status": status, "mode": mode, "signature": signature,
        "options": options, "inputs": json.dumps(list(inputs)), "target": target,
        "key_hint": key_hint or None, "fingerprint": fingerprint,
        "credits_estimated": credits_estimated, **counts, "message": message, **kind,
    }  # fmt: skip


class RunBook(RunReader):
    """One run's own row and its ledger, read (`RunReader`) and written."""

    def __init__(
        self, db: Writer | duckdb.DuckDBPyConnection, run_id: str, *, clock: Clock = utc_now
    ) -> None:
        super().__init__(db, run_id)
        self.now = clock
        self._beaten: datetime | None = None
        self._thread = threading.get_ident()

    # --- the run --------------------------------------------------------------------------------

    def record(self, run: dict[str, Any]) -> None:
        """Insert the run's row (a `runs` row's columns), this process its owner; its status one
        a run is recorded with (`RUN_OPENS`), else `IllegalMove`."""
        if run.get("status") not in RUN_OPENS:
            raise IllegalMove(
                f"run {self.run_id} is recorded {sorted(RUN_OPENS)}, not {run.get('status')}"
            )
        self._beaten = run["created_at"]
        values = {**run, "run_id": self.run_id, **owned_now(run["created_at"])}
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self.con.execute(
            f"insert into runs ({names}) values ({marks})",  # noqa: S608 - our columns
            list(values.values()),
        )

    def update(self, **values: Any) -> None:
        """Set columns of the run's row (a research run's usage, counts, message); its status
        moves only through `moved`."""
        if "status" in values:
            raise IllegalMove(f"run {self.run_id}: its status moves through the lifecycle only")
        self._run(**values)

    def moved(self, name: str, to: str | None = None, **values: Any) -> None:
        """Make the runs lifecycle's move `name` (`placeflow.state.lifecycle.RUNS`), writing
        `values` with it; refused (`IllegalMove`, nothing written) from a status it does not
        start from."""
        move(self.con, RUNS, name, (self.run_id,), to, **values)

    def charge(
        self,
        chunk_no: int,
        ref: str,
        credits: int,
        note: str,
        at: datetime | None = None,
        *,
        replaces: str | None = None,
    ) -> None:
        """What a request was charged (a research request's answer, or its lost answer per the
        key's usage); nothing is written for 0 credits. `replaces`: the ref of an earlier load's
        charge of the same answer (a load repeated after a crash) replaced, never added to."""
        if replaces is not None:
            self.con.execute(
                "delete from credit_ledger where run_id = ? and chunk_no = ? and kind = 'charge'"
                " and ref = ?",
                [self.run_id, chunk_no, replaces],
            )
        if credits:
            self._ledger(chunk_no, ref, "charge", credits, note, at)

    def possible(self, chunk_no: int, ref: str, credits: int, note: str) -> None:
        """A research request that may have been billed without its answer: its possible
        credits (not ruled out, not counted as charged)."""
        self._ledger(chunk_no, ref, "possible", credits, note)

    def billed_twice(self, chunk_no: int, *, ref: str, credits: int, why: str) -> None:
        """The service created a second job of the chunk's places (a re-send it took for new
        work after an attempt that had created one): the `credits` that job may cost are a
        `possible` ledger entry of the chunk (the account books what the usage shows it cost)
        and are counted in possible_extra_credits."""
        with transaction(self.con):
            self._ledger(chunk_no, ref, "possible", credits, why)
            self._run_extra(credits)

    def adjusted(self, credits: int, note: str) -> None:
        """The ledger balanced to the service's usage: a signed entry of the difference."""
        self._ledger(None, "usage", "adjustment", credits, note)

    def learnt(self, target: str, shape: str, *, billed: bool) -> None:
        """What the service was seen to bill for a row shape (see billing_readings)."""
        self.con.execute(
            "insert or replace into billing_readings values (?, ?, ?, ?, ?)",
            [target, shape, billed, self.run_id, self.now()],
        )

    def take_over(self, service: str | None = None) -> str | None:
        """This process carries the run out from now (resumed): its host, pid and a first
        heartbeat (`placeflow.state.owners`); an interrupted run shows `running` again while
        it is carried out (the runs lifecycle's `started`), until its account closes it.

        `service`, the label of the service it is resumed on: when the run began on another
        (a sandbox whose state was lost, another base URL), the usage it read then is not this
        service's, so it is let go (no reconciliation against it) and the new label recorded;
        what to say of it is returned (None: the same service)."""
        self._beaten = self.now()
        self._run(**owned_now(self._beaten))
        row = self.con.execute(
            "select status, target from runs where run_id = ?", [self.run_id]
        ).fetchone()
        if row is not None and row[0] in ("planned", "interrupted"):
            self.moved("started")
        if service is None or row is None or row[1] == service:
            return None
        self._run(usage_before=None, target=service)
        return (
            f"run {self.run_id} began on {row[1]} and is resumed on {service}: the usage read"
            " then is not this service's, so the run's credits are not reconciled with it"
        )

    def beat(self) -> None:
        """The owner's heartbeat, written at most every BEAT_EVERY (called while it waits), by
        the thread the state belongs to (another thread's write to `runs` could conflict)."""
        if threading.get_ident() != self._thread:
            return
        now = self.now()
        if self._beaten is not None and now - self._beaten < BEAT_EVERY:
            return
        self._beaten = now
        self._run(heartbeat_at=now)

    def interrupted(self, reason: str) -> None:
        """The run stopped part way; `placeflow resume` picks it up."""
        self.moved("interrupted", message=reason)

    def closed(
        self,
        *,
        status: str,
        succeeded: int,
        failed: int,
        usage_after: int | None,
        message: str | None,
    ) -> None:
        self.moved(  # the message: none left from an earlier stop
            "closed", status, finished_at=self.now(), succeeded=succeeded, failed=failed,
            usage_after=usage_after, message=message,
        )  # fmt: skip

    def _run_extra(self, credits: int) -> None:
        """`credits` more may have been charged twice (a request re-sent whose first charge is
        not known)."""
        self.con.execute(
            "update runs set possible_extra_credits = possible_extra_credits + ? where run_id = ?",
            [credits, self.run_id],
        )

    # --- the one statement of each kind -----------------------------------------------------------

    def _run(self, **values: Any) -> None:
        names = ", ".join(f"{name} = ?" for name in values)
        self.con.execute(
            f"update runs set {names} where run_id = ?",  # noqa: S608 - our names
            [*values.values(), self.run_id],
        )

    def _ledger(
        self,
        chunk_no: int | None,
        ref: str,
        kind: LedgerKind,
        credits: int,
        note: str,
        at: datetime | None = None,
    ) -> None:
        self.con.execute(
            "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at, note)"
            " values (?, ?, ?, ?, ?, ?, ?)",
            [self.run_id, chunk_no, ref, kind, credits, at or self.now(), note],
        )
