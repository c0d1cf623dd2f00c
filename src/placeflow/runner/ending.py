"""How a run, a resume, a refresh or a research is carried out and ends, whoever carries it out.

Two callers, one logic: the Prefect flows (`placeflow.flows.run`, `placeflow.flows.refresh`,
`placeflow.flows.research`, whose ending is `placeflow.runner.research_due.research_ending`)
and the CLI's local path (no Prefect API configured: `placeflow.cli.run`). Each passes how to
open the service, its step wrapper (a Prefect task, or the stage as it is), its event callback
and an `Ending` with its publisher (Prefect artifacts, or files in the run's folder:
`placeflow.reporting.published`). What comes back is an `Outcome`: the result dict (the run
summary with its exit code and the HTML report's path, or an error's message and code) and,
when the command did not end well, why. A flow turns it into its final state (`Failed` when
`failure` is set); the CLI prints it. A run stopped by its storage (a full or read-only disk)
is marked `interrupted` with the command that finishes it.

Nothing here imports Prefect.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from placeflow.config import Settings
from placeflow.errors import (
    EXIT_FAILED,
    EXIT_OK,
    BudgetRefused,
    PlaceflowError,
    RunStopped,
    exit_code,
)
from placeflow.events import Event
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.pipeline.source import Source
from placeflow.reporting.published import Exported, Published, Publisher
from placeflow.reporting.summary import exit_code_for
from placeflow.runner import orchestrate
from placeflow.runner.prepare import as_source, fingerprint
from placeflow.runner.refresh import NothingStale, refresh
from placeflow.runner.steps import Step
from placeflow.runner.target import Target, open_target
from placeflow.state.marking import mark_run
from placeflow.store.diskfull import StorageStop, stop_message, storage_stop
from placeflow.support.objects import Storage

RUN_PREFIX = "place-refresh"
"""A run's artifact names' prefix: place-refresh-summary, -rejects, -changes, -report."""
REFRESH_PREFIX = "refresh"
"""A refresh's: refresh-summary, -rejects, -changes, -report."""

Service = Callable[[], AbstractContextManager[Target]]
"""Opens the service a command talks to (called inside the command, so its errors are its)."""
Exporter = Callable[[str, str], Exported]
"""Loads the warehouse `db` into `export_to` at the end of a completed run: (db, export_to)."""


@dataclass(frozen=True)
class Outcome:
    """A command's end: `data`, the result dict with its `exit_code`; `failure`, the message of
    a command that did not end well (None when it did)."""

    data: dict[str, Any]
    failure: str | None = None


@contextmanager
def open_service(
    settings: Settings,
    *,
    db: str | None = None,
    wrap: Callable[[Target], Target] | None = None,
    quiet: bool = False,
) -> Iterator[Target]:
    """The service `settings` name (or the embedded sandbox, its state kept beside the
    warehouse `db`, said on stderr unless `quiet`), `wrap`ped (the flows keep a deployment's
    requests to the Prefect server's limits)."""
    with open_target(
        api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits, db=db
    ) as opened:
        target = wrap(opened) if wrap is not None else opened
        if settings.uses_sandbox and not quiet:
            print(f"placeflow: no PLACEFLOW_API_KEY set; using the {target.label}", file=sys.stderr)
        yield target


def _describe_run(summary: RunSummary) -> str:
    return f"placeflow run {summary.run_id}"


def _describe_refresh(summary: RunSummary) -> str:
    return f"placeflow refresh {summary.run_id}: {summary.places_changed} changed"


def _report(done: Published | None) -> dict[str, str]:
    """The HTML report's path for the result, when one was written."""
    return {"report": done.report} if done is not None and done.report else {}


@dataclass(frozen=True)
class Ending:
    """How a command publishes its end: with which publisher, under which prefix, what a
    summary is called, and how a completed run is exported when asked (`export_to`)."""

    publisher: Publisher
    prefix: str = RUN_PREFIX
    what: str = "run"
    describe: Callable[[RunSummary], str] = _describe_run
    exporter: Exporter | None = None
    publish_refused: bool = False
    """Whether a refused command's summary is published too (a research's: its message is
    what to act on); a refused run publishes nothing."""

    def publish(self, summary: RunSummary, db: str, export_to: str | None = None) -> Published:
        exported: Exported | None = None
        if export_to:
            if self.exporter is None:
                exported = (None, f"no exporter here for {export_to}")
            else:
                exported = self.exporter(db, export_to)
        return self.publisher(
            summary, db=db, prefix=self.prefix, description=self.describe(summary),
            exported=exported,
        )  # fmt: skip

    def finish(self, summary: RunSummary, db: str, export_to: str | None = None) -> Outcome:
        """A completed command's end: export (when asked), artifacts, the result."""
        done = self.publish(summary, db, export_to)
        data = {**summary.as_dict(), **_report(done), "exit_code": exit_code_for(summary.status)}
        if done.export_error is not None:
            message = f"the {self.what} completed but its export failed: {done.export_error}"
            return Outcome({**data, "exit_code": EXIT_FAILED, "message": message}, message)
        if data["exit_code"] != EXIT_OK:
            return Outcome(data, summary.message or summary.status)
        return Outcome(data)

    def stopped(self, exc: PlaceflowError, db: str) -> Outcome:
        """The end of a command that raised (its artifacts published when it has a summary)."""
        code = exit_code(exc)
        stopped = exc.summary if isinstance(exc, RunStopped) else None
        stopped = stopped if isinstance(stopped, RunSummary) else None
        if stopped is None:
            status = "refused" if isinstance(exc, BudgetRefused) else "failed"
            data: dict[str, Any] = {"status": status, "message": str(exc), "exit_code": code}
            if isinstance(exc, RunStopped):
                data["run_id"] = exc.run_id
            return Outcome(data, str(exc))
        quiet = isinstance(exc, BudgetRefused) and not self.publish_refused
        done = None if quiet else self.publish(stopped, db)
        data = {**stopped.as_dict(), **_report(done), "exit_code": code,
                "message": stopped.message or str(exc)}  # fmt: skip
        return Outcome(data, str(exc))

    def out_of_storage(
        self,
        stop: StorageStop,
        db: str,
        *,
        run_id: str | None = None,
        command: str | None = None,
        since: datetime | None = None,
    ) -> Outcome:
        """The end of a command its storage stopped: the run marked `interrupted` when the
        warehouse still takes a write, its id, state and the command that finishes it."""
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
        return Outcome(data, message)

    def caught(
        self,
        exc: Exception,
        db: str,
        *,
        run_id: str | None = None,
        command: str | None = None,
        since: datetime | None = None,
    ) -> Outcome:
        """The end of a command that raised `exc`: stopped by its storage, or by one of
        placeflow's errors; anything else is raised again (a bug)."""
        stop = None if isinstance(exc, RunStopped) else storage_stop(exc)
        if stop is not None:  # a full or read-only disk, raised as it is or inside our error
            return self.out_of_storage(stop, db, run_id=run_id, command=command, since=since)
        if isinstance(exc, PlaceflowError):
            return self.stopped(exc, db)
        raise exc


def run_ending(publisher: Publisher, exporter: Exporter | None = None) -> Ending:
    """The ending of `placeflow run` and `resume`."""
    return Ending(publisher, exporter=exporter)


def refresh_ending(publisher: Publisher, exporter: Exporter | None = None) -> Ending:
    """The ending of `placeflow refresh`."""
    return Ending(
        publisher, prefix=REFRESH_PREFIX, what="refresh", describe=_describe_refresh,
        exporter=exporter,
    )  # fmt: skip


# --- the commands ------------------------------------------------------------------------------


def run_outcome(
    ending: Ending,
    *,
    service: Service,
    step: Step,
    on_event: Callable[[Event], None] | None,
    inputs: Sequence[str] | None = None,
    options: RunOptions | None = None,
    db: str,
    resume_run_id: str | None = None,
    export_to: str | None = None,
    storage: Storage | None = None,
) -> Outcome:
    """`placeflow.run` (or `resume`, with `resume_run_id`) and its end (module docstring);
    `storage` reaches inputs in object storage."""
    options = options or RunOptions()
    source = as_source(list(inputs or []), storage)
    command = None if resume_run_id else _command(source, options)
    try:
        with service() as target:
            if resume_run_id:
                summary = orchestrate.resume(
                    resume_run_id, db=db, target=target, step=step, on_event=on_event,
                    **resume_options(options),
                )  # fmt: skip
            else:
                summary = orchestrate.run(
                    source, options=options, db=db, target=target, step=step,
                    on_event=on_event,
                )  # fmt: skip
    except Exception as exc:
        return ending.caught(exc, db, run_id=resume_run_id, command=command)
    return ending.finish(summary, db, export_to)


def refresh_outcome(
    ending: Ending,
    *,
    service: Service,
    step: Step,
    on_event: Callable[[Event], None] | None,
    db: str,
    older_than: str,
    mode: str,
    max_credits: int | None,
    limit: int | None,
    country: str | None,
    tuning: Mapping[str, Any],
    export_to: str | None = None,
) -> Outcome:
    """`placeflow.runner.refresh.refresh` and its end; `tuning` the run options given (poll_timeout,
    stuck_after, idempotency_window, claim_wait, resend_uncertain; None: not given)."""
    began = datetime.now(UTC)
    try:
        given = {k: v for k, v in tuning.items() if v is not None}
        options = RunOptions.parse(given)
        with service() as target:
            summary = refresh(
                db=db, older_than=older_than, mode=mode, max_credits=max_credits, limit=limit,
                country=country, options=options, target=target, step=step, on_event=on_event,
            )  # fmt: skip
    except Exception as exc:  # a full or read-only disk: the refresh opened since `began`
        return ending.caught(exc, db, since=began)
    if isinstance(summary, NothingStale):  # nothing recorded: nothing to publish or export
        return Outcome({**summary.as_dict(), "exit_code": EXIT_OK})
    return ending.finish(summary, db, export_to)


def resume_options(options: RunOptions) -> dict[str, Any]:
    """What a resume takes from its `options`: only the options given (a poll timeout not
    given is the run's own, not the default's), whether to resend uncertain chunks, and how
    often a live display wants the jobs polled."""
    given = options.model_fields_set
    return {
        "poll_timeout": options.poll_timeout if "poll_timeout" in given else None,
        "resend_uncertain": options.resend_uncertain,
        "watch_every": options.watch_every,
    }


def _command(source: Source, options: RunOptions) -> str | None:
    """The identity of the run command (as the run computes it), to find its run afterwards."""
    try:
        return fingerprint(source, options)
    except Exception:  # unreadable inputs: the run itself says why
        return None
