"""Marking a run stopped from outside its own flow: the CLI's Ctrl-C and a flow that ended in an
error mark the run `interrupted` (with the command that finishes it) and read back what the
warehouse records of it. A courtesy: a run found `running` resumes all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from placeflow.state.lifecycle import RUNS, move

FIGURES = ("rows_read", "rejected", "duplicates", "skipped_fresh", "submitted", "succeeded")
"""The run's counts an interrupted or stopped run's JSON document carries."""


@dataclass(frozen=True)
class Marked:
    """A run as the warehouse records it once it was marked stopped (or could not be)."""

    run_id: str
    status: str
    marked: bool
    """Whether the warehouse took the mark (a full or read-only disk refuses it)."""
    jobs_submitted: int = 0
    jobs_done: int = 0
    jobs_running: int = 0
    figures: dict[str, int] = field(default_factory=dict)


def mark_run(
    db: str,
    *,
    run_id: str | None = None,
    since: datetime | None = None,
    fingerprint: str | None = None,
    message: Callable[[str, str], str],
) -> Marked | None:
    """Mark the run `interrupted` with `message(run_id, db)` and read it back; None when no
    such run is recorded. The run is `run_id`, else the newest opened at or after `since`,
    else the newest unfinished one of the command `fingerprint`. When the warehouse cannot be
    written (a full or read-only disk), it is only read: `marked` says which."""
    try:
        con = duckdb.connect(db)  # this process's own database instance, when the run holds it
        writable = True
    except duckdb.Error:
        con = duckdb.connect(db, read_only=True)
        writable = False
    try:
        run_id = run_id or _find(con, since, fingerprint)
        if run_id is None:
            return None
        marked = False
        if writable:
            try:
                status = con.execute("select status from runs where run_id = ?", [run_id])
                if status.fetchall() in ([("planned",)], [("running",)]):  # else kept as it is
                    move(con, RUNS, "interrupted", (run_id,), message=message(run_id, db))
                marked = True
            except duckdb.Error:  # a full disk: the run stays as the crash left it
                marked = False
        return _read_back(con, run_id, marked)
    finally:
        con.close()


def _find(con: Any, since: datetime | None, fingerprint: str | None) -> str | None:
    if since is not None:
        row = con.execute(
            "select run_id from runs where created_at >= ? order by created_at desc limit 1",
            [since],
        ).fetchone()
        if row is not None:
            return str(row[0])
    if fingerprint is not None:
        row = con.execute(
            "select run_id from runs where fingerprint = ?"
            " and status in ('planned', 'running', 'interrupted')"
            " order by created_at desc limit 1",
            [fingerprint],
        ).fetchone()
        if row is not None:
            return str(row[0])
    return None


def _read_back(con: Any, run_id: str, marked: bool) -> Marked:
    row = con.execute(
        "select status, rows_read, rejected, duplicates, skipped_fresh, submitted, succeeded"
        " from runs where run_id = ?",
        [run_id],
    ).fetchone()
    jobs = con.execute(
        "select count(*) filter (where batch_id is not null),"
        " count(*) filter (where status in ('completed', 'loaded')),"
        " count(*) filter (where status = 'submitted' and batch_id is not null)"
        " from jobs where run_id = ?",
        [run_id],
    ).fetchone()
    submitted, done, running = (int(n) for n in jobs) if jobs else (0, 0, 0)
    if row is None:
        return Marked(run_id, "interrupted", marked, submitted, done, running)
    figures = {k: int(v) for k, v in zip(FIGURES, row[1:], strict=True) if v is not None}
    return Marked(run_id, str(row[0]), marked, submitted, done, running, figures)
