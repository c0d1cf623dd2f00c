"""The `refresh_stale_places` flow: `placeflow.runner.refresh.refresh` with each stage a Prefect
task.

The stale places of the warehouse are re-checked through the same stages as a run of files, with
the same step wrapper as `run_files` (`as_task`), and end as `placeflow.runner.ending` ends them
(the same for `placeflow refresh` without Prefect). Parameters are plain values, so a deployment
(prefect.yaml) or `placeflow refresh` can pass them: the database, how old an answer must be to
be re-checked (`30d`, `12h`, `0` for all), the mode, a credit budget (the most-likely-changed
places first when it does not buy them all), a limit and a country. The markdown artifact
`refresh-summary` carries the run summary and the changes found, by kind; beside it,
`refresh-rejects` and `refresh-changes` tables and a `refresh-report` link to the HTML report
(src/placeflow/flows/artifacts.py). With `export_to`, a completed refresh ends with an
incremental export (Parquet directory or PostgreSQL URL), summarised in the markdown artifact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import flow

from placeflow.config import warehouse_db
from placeflow.events import Event
from placeflow.flows.artifacts import publish
from placeflow.flows.credentials import ExportTo
from placeflow.flows.prefect_events import PrefectEvents
from placeflow.flows.progress_artifact import ProgressArtifact
from placeflow.flows.run import as_state, credentials, exporter, service_target
from placeflow.flows.tasks import as_task
from placeflow.runner.ending import REFRESH_PREFIX, Outcome, refresh_ending, refresh_outcome
from placeflow.store.warehouse import DEFAULT_DB

PREFIX = REFRESH_PREFIX
"""The artifact keys' prefix: refresh-summary, -rejects, -changes, -report, -progress."""

REFRESH = refresh_ending(publish, exporter(None))


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
    watch_every: float | None = None,
    pg_password_block: str | None = None,
) -> Any:
    """Re-check the warehouse's places whose answer is `older_than` old, recording changes.

    Returns the run summary as a dict (also published as a markdown artifact, with the change
    counts); a refresh that did not complete returns a Failed state carrying the same dict.
    With `export_to`, a completed refresh ends with an incremental export there. `on_event`
    is for a caller in this process (the CLI's live display); the events also move a progress
    artifact. `resend_uncertain`, `stuck_after`, `idempotency_window` and `claim_wait` are
    `placeflow resume`'s and `run`'s (`RunOptions`); `watch_every` is set by the CLI when it
    draws the live display (`RunOptions.watch_every`). The export's PostgreSQL password comes
    from the Secret block `pg_password_block` or PGPASSWORD, never from `export_to`.
    """
    db = warehouse_db(db)  # relative: under PLACEFLOW_HOME, the warehouse host's folder
    ending = credentials(lambda e: refresh_ending(publish, e), export_to, pg_password_block, db)
    if isinstance(ending, Outcome):
        return as_state(ending)
    progress = ProgressArtifact(
        f"placeflow refresh of {db}", forward=on_event, key=f"{PREFIX}-progress"
    )
    told = PrefectEvents(db, kind="refresh", forward=progress)  # its facts, as events
    tuning = {"poll_timeout": poll_timeout, "stuck_after": stuck_after,
              "idempotency_window": idempotency_window, "claim_wait": claim_wait,
              "resend_uncertain": resend_uncertain, "watch_every": watch_every}  # fmt: skip
    outcome = refresh_outcome(
        ending, service=lambda: service_target(db), step=as_task, on_event=told, db=db,
        older_than=older_than, mode=mode, max_credits=max_credits, limit=limit,
        country=country, tuning=tuning, export_to=export_to,
    )  # fmt: skip
    told.ended(outcome.data)
    return as_state(outcome)
