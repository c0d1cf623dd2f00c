"""The `refresh_stale_places` flow: `placeflow.refresh.refresh` with each stage a Prefect task.

The stale places of the warehouse are re-checked through the same stages as a run of files,
with the same step wrapper as `place_refresh` (`as_task`). Parameters are plain values, so a
deployment (prefect.yaml) or `placeflow refresh` can pass them: the database, how old an
answer must be to be re-checked (`30d`, `12h`, `0` for all), the mode, a credit budget (the
most-likely-changed places first when it does not buy them all), a limit and a country. The
markdown artifact `refresh-summary` carries the run summary and the changes found, by kind.
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.states import Failed

from flows.place_refresh import as_task
from placeflow.config import load_settings
from placeflow.errors import BudgetRefused, PlaceflowError, RunStopped
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.refresh import refresh
from placeflow.report import EXIT_OK, exit_code, exit_code_for, markdown_summary
from placeflow.service import open_target
from placeflow.warehouse import DEFAULT_DB


def _publish(summary: RunSummary) -> None:
    create_markdown_artifact(
        key="refresh-summary",
        markdown=markdown_summary(summary),
        description=f"placeflow refresh {summary.run_id}: {summary.places_changed} changed",
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
) -> Any:
    """Re-check the warehouse's places whose answer is `older_than` old, recording changes.

    Returns the run summary as a dict (also published as a markdown artifact, with the change
    counts); a refresh that did not complete returns a Failed state carrying the same dict.
    """
    try:
        options = RunOptions(poll_timeout=poll_timeout) if poll_timeout else None
        settings = load_settings()
        with open_target(
            api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
        ) as target:
            if settings.uses_sandbox:
                print(f"placeflow: no PLACEFLOW_API_KEY set; using the {target.label}")
            summary = refresh(
                db=db, older_than=older_than, mode=mode, max_credits=max_credits, limit=limit,
                country=country, options=options, target=target, step=as_task,
            )  # fmt: skip
    except PlaceflowError as exc:
        code = exit_code(exc)
        stopped = exc.summary if isinstance(exc, RunStopped) else None
        if stopped is None:
            data = {"status": "failed", "message": str(exc), "exit_code": code}
            return Failed(message=str(exc), data=data)
        if not isinstance(exc, BudgetRefused):
            _publish(stopped)
        data = {**stopped.as_dict(), "exit_code": code, "message": stopped.message or str(exc)}
        return Failed(message=str(exc), data=data)
    _publish(summary)
    data = {**summary.as_dict(), "exit_code": exit_code_for(summary.status)}
    if data["exit_code"] != EXIT_OK:
        return Failed(message=summary.message or summary.status, data=data)
    return data
