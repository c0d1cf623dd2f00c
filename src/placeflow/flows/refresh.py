"""The `refresh_stale_places` flow: `placeflow.refresh.refresh` with each stage a Prefect task.

The stale places of the warehouse are re-checked through the same stages as a run of files,
with the same step wrapper as `run_files` (`as_task`). Parameters are plain values, so a
deployment (prefect.yaml) or `placeflow refresh` can pass them: the database, how old an
answer must be to be re-checked (`30d`, `12h`, `0` for all), the mode, a credit budget (the
most-likely-changed places first when it does not buy them all), a limit and a country. The
markdown artifact `refresh-summary` carries the run summary and the changes found, by kind;
beside it, `refresh-rejects` and `refresh-changes` tables and a `refresh-report` link to the
HTML report (src/placeflow/flows/artifacts.py). With `export_to`, a completed refresh ends with an
incremental export (Parquet directory, Delta or PostgreSQL URL; its password from the Secret
block `pg_password_block` or PGPASSWORD, never in the URL), summarised in the markdown artifact.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from prefect import flow

from placeflow.diskfull import storage_stop
from placeflow.errors import PlaceflowError, RunStopped
from placeflow.events import Event
from placeflow.flows.credentials import ExportTo, export_password
from placeflow.flows.progress_artifact import ProgressArtifact
from placeflow.flows.run import Ending, service_target
from placeflow.flows.tasks import as_task
from placeflow.options import RunOptions
from placeflow.refresh import refresh
from placeflow.warehouse import DEFAULT_DB

PREFIX = "refresh"
"""The artifact keys' prefix: refresh-summary, -rejects, -changes, -report, -progress."""

REFRESH = Ending(
    prefix=PREFIX,
    what="refresh",
    describe=lambda s: f"placeflow refresh {s.run_id}: {s.places_changed} changed",
)


@flow(name="refresh_stale_places", log_prints=False)
def refresh_stale_places(
    db: str = DEFAULT_DB,
    older_than: str = "30d",
    mode: str = "enrich",
    max_credits: int | None = None,
    limit: int | None = None,
    country: str | None = None,
    poll_timeout: float | None = None,
    export_to: ExportTo = None,
    on_event: Callable[[Event], None] | None = None,
    resend_uncertain: bool = False,
    stuck_after: float | None = None,
    idempotency_window: float | None = None,
    claim_wait: float | None = None,
    pg_password_block: str | None = None,
) -> Any:
    """Re-check the warehouse's places whose answer is `older_than` old, recording changes.

    Returns the run summary as a dict (also published as a markdown artifact, with the change
    counts); a refresh that did not complete returns a Failed state carrying the same dict.
    With `export_to`, a completed refresh ends with an incremental export there (the password
    from the Secret block `pg_password_block` or PGPASSWORD; one in `export_to` is refused
    before anything is done, exit code 2). `on_event`
    is for a caller in this process (the CLI's live display); the events also move a progress
    artifact. `resend_uncertain`, `stuck_after`, `idempotency_window` and `claim_wait` are
    `placeflow resume`'s and `run`'s (`RunOptions`).
    """
    try:
        password = export_password(export_to, pg_password_block)
    except PlaceflowError as exc:
        return REFRESH.stopped(exc, db)
    progress = ProgressArtifact(
        f"placeflow refresh of {db}", forward=on_event, key=f"{PREFIX}-progress"
    )
    began = datetime.now(UTC)
    try:
        given = {"poll_timeout": poll_timeout, "stuck_after": stuck_after,
                 "idempotency_window": idempotency_window, "claim_wait": claim_wait}  # fmt: skip
        tuned = {k: v for k, v in given.items() if v is not None}
        options = RunOptions.parse({**tuned, "resend_uncertain": resend_uncertain})
        with service_target() as target:
            summary = refresh(
                db=db, older_than=older_than, mode=mode, max_credits=max_credits, limit=limit,
                country=country, options=options, target=target, step=as_task,
                on_event=progress,
            )  # fmt: skip
    except Exception as exc:
        stop = None if isinstance(exc, RunStopped) else storage_stop(exc)
        if stop is not None:  # a full or read-only disk: the refresh opened since `began`
            return REFRESH.out_of_storage(stop, db, since=began)
        if isinstance(exc, PlaceflowError):
            return REFRESH.stopped(exc, db)
        raise
    return REFRESH.finish(summary, db, export_to, password)
