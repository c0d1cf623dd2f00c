"""The `run_files` flow: `placeflow.run` with its stages made Prefect tasks.

The order of a run is the library's (`placeflow.orchestrate`); this flow only reads the
settings, opens the target, passes a step wrapper (`placeflow.flows.tasks`: each per-run stage
a task, each per-chunk stage a logged call; the network stages retried for transient failures
only: a retry resumes from the warehouse, so it never pays twice) and publishes the summary
(`placeflow.flows.artifacts`: markdown, rejects and changes tables, a link to the HTML report).
Parameters are plain values: the inputs, the options (`RunOptions`, the CLI's flags), the
database path, to resume a run id, `export_to` (a directory, file://, delta:// or
postgresql:// URL, never with a password) to end a completed run with an incremental export,
and `pg_password_block`, a Prefect Secret block holding its PostgreSQL password (else PGPASSWORD
in the worker's environment; `placeflow.flows.credentials`). Under a Prefect server of its own
(PREFECT_API_URL), the key's rate limits are kept by the server's global concurrency limits,
shared with every other flow run on it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prefect import flow
from prefect.states import Failed

from placeflow import orchestrate
from placeflow.config import load_settings, prefect_server_url
from placeflow.diskfull import StorageStop, stop_message, storage_stop
from placeflow.errors import (
    EXIT_FAILED,
    EXIT_OK,
    BudgetRefused,
    PlaceflowError,
    RunStopped,
    exit_code,
)
from placeflow.events import Event
from placeflow.flows.artifacts import Published, publish, run_export
from placeflow.flows.credentials import ExportTo, export_password
from placeflow.flows.progress_artifact import ProgressArtifact
from placeflow.flows.rate_gate import gated
from placeflow.flows.tasks import as_task
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.prepare import as_source, fingerprint
from placeflow.redact import Secret
from placeflow.reporting.summary import exit_code_for
from placeflow.state.marking import mark_run
from placeflow.target import Target, open_target
from placeflow.warehouse import DEFAULT_DB

PREFIX = "place-refresh"
"""The artifact keys' prefix: place-refresh-summary, -rejects, -changes, -report, -progress."""


@contextmanager
def service_target() -> Iterator[Target]:
    """The service the settings name (or the embedded sandbox, said on stderr), its requests
    kept to the key's limits by the Prefect server's when one of its own is in use."""
    settings = load_settings()
    with open_target(
        api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
    ) as opened:
        target = gated(opened, server_url=prefect_server_url(), sandbox=settings.uses_sandbox)
        if settings.uses_sandbox:
            print(f"placeflow: no PLACEFLOW_API_KEY set; using the {target.label}", file=sys.stderr)
        yield target


def _describe_run(summary: RunSummary) -> str:
    return f"placeflow run {summary.run_id}"


def _report(done: Published | None) -> dict[str, str]:
    """The HTML report's path for the flow's result, when one was written."""
    return {"report": done.report} if done is not None and done.report else {}


@dataclass(frozen=True)
class Ending:
    """How a flow publishes its end: the artifact keys' prefix and what a summary is called."""

    prefix: str = PREFIX
    what: str = "run"
    describe: Callable[[RunSummary], str] = _describe_run

    def publish(
        self,
        summary: RunSummary,
        db: str,
        export_to: str | None = None,
        password: Secret | None = None,
    ) -> Published:
        exported = run_export(db, export_to, password=password) if export_to else None
        return publish(
            summary,
            db=db,
            prefix=self.prefix,
            description=self.describe(summary),
            exported=exported,
        )

    def finish(
        self,
        summary: RunSummary,
        db: str,
        export_to: str | None,
        password: Secret | None = None,
    ) -> Any:
        """A completed run's end: export (when asked), artifacts, and the flow's result."""
        done = self.publish(summary, db, export_to, password)
        data = {**summary.as_dict(), **_report(done), "exit_code": exit_code_for(summary.status)}
        if done.export_error is not None:
            message = f"the {self.what} completed but its export failed: {done.export_error}"
            data = {**data, "exit_code": EXIT_FAILED, "message": message}
            return Failed(message=message, data=data)
        if data["exit_code"] != EXIT_OK:
            return Failed(message=summary.message or summary.status, data=data)
        return data

    def stopped(self, exc: PlaceflowError, db: str) -> Any:
        """The Failed state of a run that raised (its artifacts published when it has a
        summary)."""
        code = exit_code(exc)
        stopped = exc.summary if isinstance(exc, RunStopped) else None
        stopped = stopped if isinstance(stopped, RunSummary) else None
        if stopped is None:
            data = {"status": "failed", "message": str(exc), "exit_code": code}
            return Failed(message=str(exc), data=data)
        done = None if isinstance(exc, BudgetRefused) else self.publish(stopped, db)
        data = {**stopped.as_dict(), **_report(done), "exit_code": code,
                "message": stopped.message or str(exc)}  # fmt: skip
        return Failed(message=str(exc), data=data)

    def out_of_storage(
        self,
        stop: StorageStop,
        db: str,
        *,
        run_id: str | None = None,
        command: str | None = None,
        since: datetime | None = None,
    ) -> Any:
        """The Failed state of a run its storage stopped: the run marked `interrupted` when
        the warehouse still takes a write, its id, state and the command that finishes it."""
        found = None
        try:
            found = mark_run(
                db, run_id=run_id, fingerprint=command, since=since,
                message=lambda rid, path: stop_message(stop, rid, path),
            )  # fmt: skip
        except Exception:  # a warehouse that cannot even be read: said, not recorded
            found = None
        data: dict[str, Any] = {"status": "failed", "exit_code": EXIT_FAILED, "db": db}
        if found is None and run_id is not None:
            data.update(run_id=run_id, status="interrupted")
        elif found is not None:
            data.update(found.figures, run_id=found.run_id, status=found.status)
            data.update(jobs_submitted=found.jobs_submitted, recorded=found.marked)
        message = stop_message(stop, data.get("run_id"), db)
        # `next`: the resume command; None before the run was recorded (the CLI then names
        # the same command again)
        data["next"] = (
            f"placeflow resume {data['run_id']} --db {db}" if data.get("run_id") else None
        )
        data["message"] = message
        return Failed(message=message, data=data)


RUN = Ending()


@flow(name="run-files", log_prints=False)
def run_files(
    inputs: list[str] | None = None,
    options: RunOptions | None = None,
    db: str = DEFAULT_DB,
    resume_run_id: str | None = None,
    on_event: Callable[[Event], None] | None = None,
    export_to: ExportTo = None,
    pg_password_block: str | None = None,
) -> Any:
    """Validate or enrich places from files into DuckDB, spending the fewest credits.

    Returns the run summary as a dict (also published as a markdown artifact); a run that
    did not complete returns a Failed state carrying the same dict, with its exit code.
    `on_event` is for a caller in this process (the CLI's live display): a live callback is
    not stored with the flow run (Prefect keeps a placeholder), and a deployment's run has
    none. Either way the run's events move a progress artifact. With `export_to`, a completed
    run ends with an incremental export there (its summary in the markdown artifact), its
    PostgreSQL password from the Secret block `pg_password_block` or PGPASSWORD; an
    `export_to` holding a password is refused before anything is done (exit code 2).
    """
    try:
        password = export_password(export_to, pg_password_block)
    except PlaceflowError as exc:
        return RUN.stopped(exc, db)
    options = options or RunOptions()
    progress = ProgressArtifact(f"placeflow run of {db}", forward=on_event)
    command = None if resume_run_id else _command(inputs or [], options)
    try:
        with service_target() as target:
            if resume_run_id:
                summary = orchestrate.resume(
                    resume_run_id, db=db, target=target, step=as_task, on_event=progress,
                    **resume_options(options),
                )  # fmt: skip
            else:
                summary = orchestrate.run(
                    inputs or [], options=options, db=db, target=target, step=as_task,
                    on_event=progress,
                )  # fmt: skip
    except Exception as exc:
        stop = None if isinstance(exc, RunStopped) else storage_stop(exc)
        if stop is not None:  # a full or read-only disk, raised as it is or inside our error
            return RUN.out_of_storage(stop, db, run_id=resume_run_id, command=command)
        if isinstance(exc, PlaceflowError):
            return RUN.stopped(exc, db)
        raise
    return RUN.finish(summary, db, export_to, password)


def resume_options(options: RunOptions) -> dict[str, Any]:
    """What a resume takes from the flow's `options`: only the options given (a poll timeout
    not given is the run's own, not the default's), and whether to resend uncertain chunks."""
    given = options.model_fields_set
    return {
        "poll_timeout": options.poll_timeout if "poll_timeout" in given else None,
        "resend_uncertain": options.resend_uncertain,
    }


def _command(inputs: list[str], options: RunOptions) -> str | None:
    """The identity of the run command (as the run computes it), to find its run afterwards."""
    try:
        return fingerprint(as_source(inputs), options)
    except Exception:  # unreadable inputs: the run itself says why
        return None
