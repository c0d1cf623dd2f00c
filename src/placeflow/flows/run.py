"""The `run_files` flow: `placeflow.run` with its stages made Prefect tasks.

The order of a run is the library's (`placeflow.runner.orchestrate`), and how it ends is
`placeflow.runner.ending`'s (the same for the CLI's runs without Prefect); this flow only reads the
settings, opens the target, passes a step wrapper (`placeflow.flows.tasks`: each per-run stage
a task, each per-chunk stage a logged call; the network stages retried for transient failures
only: a retry resumes from the warehouse, so it never pays twice), publishes the summary as
artifacts (`placeflow.flows.artifacts`: markdown, rejects and changes tables, a link to the
HTML report) and turns the outcome into the flow run's state.
Parameters are plain values: the inputs, the options (`RunOptions`, the CLI's flags), the
database path, to resume a run id, and `export_to` (a directory, file://, delta:// or
postgresql:// URL, never with a password: `pg_password_block` names a Secret block for it) to
end a completed run with an incremental export. Under a Prefect server of its own
(PREFECT_API_URL), the key's rate limits are kept by the server's global concurrency limits,
shared with every other flow run on it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from prefect import flow
from prefect.states import Failed

from placeflow.config import load_settings, prefect_server_url, storage_settings, warehouse_db
from placeflow.errors import FailedResult, PlaceflowError
from placeflow.events import Event
from placeflow.flows.artifacts import publish, publish_result, run_export
from placeflow.flows.credentials import ExportTo, export_password
from placeflow.flows.prefect_events import PrefectEvents
from placeflow.flows.progress_artifact import ProgressArtifact
from placeflow.flows.rate_gate import gated
from placeflow.flows.tasks import as_task
from placeflow.options import RunOptions
from placeflow.reporting.published import Exported
from placeflow.runner.ending import (
    RUN_PREFIX,
    Ending,
    Outcome,
    open_service,
    resume_options,
    run_ending,
    run_outcome,
)
from placeflow.runner.target import Target
from placeflow.store.warehouse import DEFAULT_DB
from placeflow.support.redact import Secret

__all__ = ["PREFIX", "RUN", "as_state", "resume_options", "run_files", "service_target"]

PREFIX = RUN_PREFIX
"""The artifact keys' prefix: place-refresh-summary, -rejects, -changes, -report, -progress."""


def service_target(db: str | None = None) -> AbstractContextManager[Target]:
    """The service the settings name (or the embedded sandbox, its state kept beside the
    warehouse `db`, said on stderr), its requests kept to the key's limits by the Prefect
    server's when one of its own is in use."""
    settings = load_settings()
    server = prefect_server_url()
    return open_service(
        settings, db=db,
        wrap=lambda t: gated(t, server_url=server, sandbox=settings.uses_sandbox),
    )  # fmt: skip


def exporter(password: Secret | None) -> Callable[[str, str], Exported]:
    """A completed run's export at the end of a flow, with the password the flow was given
    (`placeflow.flows.credentials.export_password`: a Secret block's, or PGPASSWORD)."""
    return lambda db, export_to: run_export(db, export_to, password=password)


def credentials(
    ending: Callable[[Callable[[str, str], Exported]], Ending],
    export_to: str | None,
    pg_password_block: str | None,
    db: str,
) -> Ending | Outcome:
    """The flow's ending, exporting with the password for `export_to`; or, when `export_to`
    holds a password itself, the Outcome refusing it before anything is done (exit code 2)."""
    try:
        password = export_password(export_to, pg_password_block)
    except PlaceflowError as exc:
        return ending(exporter(None)).stopped(exc, db)
    return ending(exporter(password))


RUN = run_ending(publish, exporter(None))


def as_state(outcome: Outcome) -> Any:
    """The flow's return: the result dict, or a Failed state carrying it as a `FailedResult`
    (an exception Prefect can resolve the state into, readable as the dict: a bare dict made
    every worker log `TypeError: Unexpected result for failed state` with the summary)."""
    if outcome.failure is not None:
        return Failed(message=outcome.failure, data=FailedResult(outcome.failure, outcome.data))
    return outcome.data


@flow(name="run_files", log_prints=False)
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
    db = warehouse_db(db)
    ending = credentials(lambda e: run_ending(publish, e), export_to, pg_password_block, db)
    if isinstance(ending, Outcome):
        publish_result(ending.data)
        return as_state(ending)
    progress = ProgressArtifact(f"placeflow run of {db}", forward=on_event)
    told = PrefectEvents(db, kind="run", forward=progress)  # its facts, as events
    outcome = run_outcome(
        ending, service=lambda: service_target(db), step=as_task, on_event=told,
        inputs=inputs,
        options=options, db=db, resume_run_id=resume_run_id, export_to=export_to,
        storage=storage_settings(),
    )  # fmt: skip
    publish_result(outcome.data)
    told.ended(outcome.data)
    return as_state(outcome)
