"""Ctrl-C during `placeflow run`/`resume`: stop at once, say what was saved and how to finish.

The warehouse is written ahead (a chunk's row before its POST, its batch_id right after), so a
run stopped at any instant resumes without paying twice: stopping is the crash the run already
survives. On SIGINT the CLI therefore marks the run `interrupted` (when the warehouse lets it
within a moment), optionally cancels the run's submitted jobs (`--cancel-on-interrupt`: their
finished work is billed anyway), prints one line (or one JSON document) with the exact
`placeflow resume` command, stops Prefect's temporary server and leaves with EXIT_INTERRUPTED,
without unwinding the flow (no Prefect crash report, no traceback, no objects left to leak).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from placeflow.report import EXIT_INTERRUPTED

MARK_WAIT = 3.0
"""Seconds to wait for the warehouse to take the `interrupted` mark before leaving without it."""


class Interrupt:
    """A SIGINT handler for one CLI run: installed by `arm`, acts on the first Ctrl-C."""

    def __init__(
        self, *, db: str, as_json: bool, cancel_jobs: bool, run_id: str | None = None
    ) -> None:
        self.db = db
        self.as_json = as_json
        self.cancel_jobs = cancel_jobs
        self.run_id = run_id
        self.since = datetime.now(UTC)
        self._previous: Any = None

    def arm(self) -> None:
        self._previous = signal.signal(signal.SIGINT, self._handle)

    def disarm(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # one Ctrl-C does it; the rest wait
        try:
            outcome = self.stop()
            line = json.dumps(outcome, sort_keys=True) if self.as_json else outcome["message"]
            print(line, file=sys.stdout if self.as_json else sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            _stop_prefect_server()
            os._exit(EXIT_INTERRUPTED)

    def stop(self) -> dict[str, Any]:
        """Mark the run, cancel its jobs when asked; the outcome as the JSON document."""
        found = _bounded(lambda: _mark(self.db, self.run_id, self.since))
        run_id, status, figures = found if found else (self.run_id, None, {})
        cancelled = _bounded(lambda: _cancel(self.db, run_id)) if self.cancel_jobs else None
        if run_id is None:
            message = "placeflow: interrupted before the run was recorded; nothing was saved"
            nxt = None
        else:
            nxt = f"placeflow resume {run_id} --db {self.db}"
            jobs = figures.get("jobs_submitted", 0)
            saved = f"run {run_id} saved ({status or 'state unknown'}, {jobs} job(s) submitted"
            if cancelled is not None:
                saved += f", {cancelled} cancelled"
            message = f"placeflow: interrupted; {saved}); finish it with: {nxt}"
        return {
            "run_id": run_id,
            "status": status or "interrupted",
            "message": message,
            "next": nxt,
            "db": self.db,
            "exit_code": EXIT_INTERRUPTED,
            **figures,
        }


def _bounded(work: Callable[[], Any]) -> Any:
    """`work()` in a thread, waited for up to MARK_WAIT seconds; None if it failed or hung."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(work())
        except Exception:  # the mark is a courtesy: resume works without it
            return

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(MARK_WAIT)
    return box[0] if box else None


def _mark(db: str, run_id: str | None, since: datetime) -> tuple[str, str, dict[str, int]] | None:
    import duckdb

    con = duckdb.connect(db)  # this process's own database instance, when the run holds it
    try:
        if run_id is None:
            row = con.execute(
                "select run_id from runs where created_at >= ? order by created_at desc limit 1",
                [since],
            ).fetchone()
            if row is None:
                return None
            run_id = str(row[0])
        message = f"interrupted (Ctrl-C); `placeflow resume {run_id} --db {db}` finishes it"
        con.execute(
            "update runs set status = 'interrupted', message = ? where run_id = ?"
            " and status in ('planned', 'running')",
            [message, run_id],
        )
        status = con.execute("select status from runs where run_id = ?", [run_id]).fetchone()
        jobs = con.execute(
            "select count(*) filter (where batch_id is not null),"
            " count(*) filter (where status in ('completed', 'loaded'))"
            " from jobs where run_id = ?",
            [run_id],
        ).fetchone()
    finally:
        con.close()
    figures = {"jobs_submitted": int(jobs[0]), "jobs_done": int(jobs[1])} if jobs else {}
    return run_id, str(status[0]) if status else "interrupted", figures


def _cancel(db: str, run_id: str | None) -> int:
    """Ask the service to cancel the run's jobs still running; how many it was asked for."""
    import duckdb

    from placeflow.config import load_settings
    from placeflow.service import open_target

    if run_id is None:
        return 0
    con = duckdb.connect(db)
    try:
        rows = con.execute(
            "select batch_id from jobs where run_id = ? and status = 'submitted'"
            " and batch_id is not null",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    settings = load_settings()
    if settings.uses_sandbox:  # the embedded sandbox stops with this process, its jobs too
        return 0
    count = 0
    with (
        open_target(
            api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
        ) as target,
        target.client(timeout=2.0) as api,
    ):
        for (batch_id,) in rows:
            api.cancel_job(str(batch_id))
            count += 1
    return count


def _stop_prefect_server() -> None:
    """Stop Prefect's temporary server, if this process started one (its atexit will not run)."""
    module = sys.modules.get("prefect.server.api.server")
    if module is None:
        return
    for server in list(getattr(module.SubprocessASGIServer, "_instances", {}).values()):
        _bounded(server.stop)
