"""A run from start to summary: open or resume, check the budget, execute, account.

The flow calls these in order around `execute` (whose `execute_run` carries out the chunks
without Prefect). The warehouse is the state: a run found unfinished is resumed, never redone.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import InsufficientCredits
from placeflow.pipeline.plan import RunOptions, run_options
from placeflow.pipeline.prepare import Prepared, options_json, record_plan
from placeflow.pipeline.read import expand_inputs
from placeflow.warehouse import transaction


class BudgetRefused(Exception):
    """The run would cost more than the caller allows or the key has: nothing was spent."""

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


def new_run_id(now: datetime) -> str:
    return f"run_{now.strftime('%Y%m%dT%H%M%S')}_{secrets.token_hex(3)}"


def fingerprint(inputs: Sequence[str], options: RunOptions) -> str:
    """The identity of a run command: its files (path, size, mtime) and its options."""
    parts = [options_json(options)]
    for path in expand_inputs(inputs):
        stat = path.stat()
        parts.append(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def unfinished_run(con: duckdb.DuckDBPyConnection, print_: str) -> str | None:
    """The newest run of the same command that did not finish, to resume instead of redo."""
    row = con.execute(
        "select run_id from runs where fingerprint = ? and status in ('running', 'interrupted')"
        " order by created_at desc limit 1",
        [print_],
    ).fetchone()
    return str(row[0]) if row else None


def check_budget(prepared: Prepared, *, available: int | None) -> str | None:
    """Why the run must not start (None when it may): the caller's cap or the key's balance."""
    needed = prepared.estimate.credits
    cap = prepared.options.max_credits
    if cap is not None and needed > cap:
        return (
            f"this run could cost up to {needed:,} credits ({prepared.counts.to_send:,} places"
            f" to send) and --max-credits is {cap:,}: raise --max-credits, or narrow the"
            " input; nothing was spent"
        )
    if available is not None and needed > available:
        return (
            f"this run needs up to {needed:,} credits held at once and the key has"
            f" {available:,} available: add credits or send less; nothing was spent"
        )
    return None


def open_run(
    con: duckdb.DuckDBPyConnection,
    prepared: Prepared,
    *,
    run_id: str,
    now: datetime,
    target: str,
    key_hint: str,
    usage_before: int | None,
    print_: str,
    refused: str | None,
) -> None:
    """Record the run and its plan in one transaction (or only the run, when refused)."""
    c = prepared.counts
    with transaction(con):
        con.execute(
            "insert into runs (run_id, created_at, status, mode, attributes, include_summary,"
            " signature, inputs, options, target, key_hint, rows_read, rejected, duplicates,"
            " skipped_fresh, submitted, credits_estimated, usage_before, message, fingerprint)"
            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                now,
                "refused" if refused else "running",
                prepared.options.mode,
                ",".join(prepared.options.effective_attributes),
                prepared.options.include_summary,
                prepared.options.signature,
                json.dumps(list(prepared.inputs)),
                options_json(prepared.options),
                target,
                key_hint,
                c.rows_read,
                c.rejected,
                c.duplicates,
                c.skipped_fresh,
                c.to_send,
                prepared.estimate.credits,
                usage_before,
                refused,
                print_,
            ],
        )
        if refused:
            con.execute("update runs set finished_at = ? where run_id = ?", [now, run_id])
        else:
            record_plan(con, prepared, run_id, now)


def start(
    con: duckdb.DuckDBPyConnection,
    api: PlaceApiClient | None,
    prepared: Prepared,
    *,
    target: str,
    key_hint: str,
    now: datetime | None = None,
) -> str:
    """Check the budget and open the run; raise BudgetRefused (recorded) if it may not start."""
    now = now or datetime.now(UTC)
    run_id = new_run_id(now)
    print_ = fingerprint(prepared.inputs, prepared.options)
    usage_before: int | None = None
    available: int | None = None
    if prepared.counts.to_send and api is not None:
        usage = api.usage()
        usage_before, available = usage.current_usage, usage.spendable
    refused = check_budget(prepared, available=available)
    open_run(
        con,
        prepared,
        run_id=run_id,
        now=now,
        target=target,
        key_hint=key_hint,
        usage_before=usage_before,
        print_=print_,
        refused=refused,
    )
    if refused:
        raise BudgetRefused(refused, run_id=run_id)
    return run_id


def workdir_for(db_path: Path, run_id: str) -> Path:
    """Where a run's verified result files live: beside the database, per run."""
    return db_path.parent / "runs" / run_id


def interrupted(con: duckdb.DuckDBPyConnection, run_id: str, exc: BaseException) -> None:
    """Mark a run that stopped part way; `placeflow resume` picks it up."""
    reason = str(exc)
    if isinstance(exc, InsufficientCredits):
        reason = (
            f"credits ran out: {exc}. Add credits, then `placeflow resume {run_id}`;"
            " chunks already submitted are kept"
        )
    con.execute(
        "update runs set status = 'interrupted', message = ? where run_id = ?", [reason, run_id]
    )


@dataclass(frozen=True)
class RunRow:
    run_id: str
    status: str
    options: RunOptions
    inputs: tuple[str, ...]


def load_run(con: duckdb.DuckDBPyConnection, run_id: str) -> RunRow:
    row = con.execute(
        "select status, options, inputs from runs where run_id = ?", [run_id]
    ).fetchone()
    if row is None:
        raise LookupError(f"no run {run_id} in this database: `placeflow runs` lists them")
    opts = json.loads(row[1])
    options = run_options(
        mode=opts["mode"],
        attributes=opts["attributes"] if opts["mode"] == "enrich" else (),
        include_summary=opts["include_summary"],
        max_credits=opts["max_credits"],
        max_age=opts["max_age_days"],
        force=opts["force"],
        route=opts["route"],
        chunk_rows=opts["chunk_rows"],
        mapping=opts["mapping"],
        encoding=opts["encoding"],
    )
    return RunRow(run_id, str(row[0]), options, tuple(json.loads(row[2])))
