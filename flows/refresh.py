"""The `refresh_stale_places` flow: `placeflow.refresh.refresh` with each stage a Prefect task.

The stale places of the warehouse are re-checked through the same stages as a run of files,
with the same step wrapper as `place_refresh` (`as_task`). Parameters are plain values, so a
deployment (prefect.yaml) or `placeflow refresh` can pass them: the database, how old an
answer must be to be re-checked (`30d`, `12h`, `0` for all), the mode, a credit budget (the
most-likely-changed places first when it does not buy them all), a limit and a country. The
markdown artifact `refresh-summary` carries the run summary and the changes found, by kind;
beside it, `refresh-rejects` and `refresh-changes` tables and a `refresh-report` link to the
HTML report (flows/artifacts.py). With `export_to`, a completed refresh ends with an
incremental export (Parquet directory or PostgreSQL URL), summarised in the markdown artifact.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from prefect import flow
from prefect.states import Failed

from flows.artifacts import Published, publish, run_export
from flows.place_refresh import as_task
from flows.progress_artifact import ProgressArtifact
from flows.rate_gate import gated
from placeflow.config import load_settings, postgres_password, prefect_server_url
from placeflow.errors import BudgetRefused, PlaceflowError, RunStopped
from placeflow.events import Event
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.refresh import refresh
from placeflow.report import EXIT_FAILED, EXIT_OK, exit_code, exit_code_for
from placeflow.service import open_target
from placeflow.warehouse import DEFAULT_DB

PREFIX = "refresh"
"""The artifact keys' prefix: refresh-summary, -rejects, -changes, -report, -progress."""


def _publish(summary: RunSummary, db: str, export_to: str | None = None) -> Published:
    exported = run_export(db, export_to, password=postgres_password()) if export_to else None
    return publish(
        summary,
        db=db,
        prefix=PREFIX,
        description=f"placeflow refresh {summary.run_id}: {summary.places_changed} changed",
        exported=exported,
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
    export_to: str | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> Any:
    """Re-check the warehouse's places whose answer is `older_than` old, recording changes.

    Returns the run summary as a dict (also published as a markdown artifact, with the change
    counts); a refresh that did not complete returns a Failed state carrying the same dict.
    With `export_to`, a completed refresh ends with an incremental export there. `on_event`
    is for a caller in this process (the CLI's live display); the events also move a progress
    artifact.
    """
    progress = ProgressArtifact(
        f"placeflow refresh of {db}", forward=on_event, key=f"{PREFIX}-progress"
    )
    try:
        options = RunOptions(poll_timeout=poll_timeout) if poll_timeout else None
        settings = load_settings()
        with open_target(
            api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
        ) as opened:
            target = gated(opened, server_url=prefect_server_url(), sandbox=settings.uses_sandbox)
            if settings.uses_sandbox:
                print(
                    f"placeflow: no PLACEFLOW_API_KEY set; using the {target.label}",
                    file=sys.stderr,
                )
            summary = refresh(
                db=db, older_than=older_than, mode=mode, max_credits=max_credits, limit=limit,
                country=country, options=options, target=target, step=as_task,
                on_event=progress,
            )  # fmt: skip
    except PlaceflowError as exc:
        code = exit_code(exc)
        stopped = exc.summary if isinstance(exc, RunStopped) else None
        if stopped is None:
            data = {"status": "failed", "message": str(exc), "exit_code": code}
            return Failed(message=str(exc), data=data)
        if not isinstance(exc, BudgetRefused):
            _publish(stopped, db)
        data = {**stopped.as_dict(), "exit_code": code, "message": stopped.message or str(exc)}
        return Failed(message=str(exc), data=data)
    done = _publish(summary, db, export_to)
    data = {**summary.as_dict(), "exit_code": exit_code_for(summary.status)}
    if done.export_error is not None:
        message = f"the refresh completed but its export failed: {done.export_error}"
        data = {**data, "exit_code": EXIT_FAILED, "message": message}
        return Failed(message=message, data=data)
    if data["exit_code"] != EXIT_OK:
        return Failed(message=summary.message or summary.status, data=data)
    return data
