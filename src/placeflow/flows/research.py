"""The `research_stale_places` flow: `placeflow research --from-warehouse` on a schedule.

The places of the warehouse whose research of `fields` is `older_than` old (or missing) are
researched within `max_credits` (refused before spending when the estimate is over it), at most
`limit` of them, by the library (`placeflow.runner.research_due.research_outcome`: the same
selection as the CLI's, the same research, resume and ledger, ended as a run is by
`research_ending`, a `placeflow.runner.ending.Ending`). This flow only wires it: each of its
stages a task run (`placeflow.flows.tasks.as_task`, as the run's flows), the service the settings
name, its requests kept to the key's limits by the Prefect server's global concurrency limits under
a deployment (`placeflow.flows.run.service_target`, as the other flows), the export's password from
`pg_password_block` or PGPASSWORD (never from `export_to`), the run's artifacts
(`placeflow.flows.artifacts.publish`: `research-summary`, -rejects, -changes, -report) and a
`research-progress` artifact, and the flow run's state: Completed only when the research
completed (and its export, when asked, too); a refused budget, a research stopped part way or a
failed export end Failed with the summary as data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import flow

from placeflow.config import warehouse_db
from placeflow.errors import PlaceflowError, exit_code
from placeflow.events import Event
from placeflow.flows.artifacts import publish
from placeflow.flows.credentials import ExportTo, export_password
from placeflow.flows.prefect_events import PrefectEvents
from placeflow.flows.progress_artifact import ProgressArtifact
from placeflow.flows.run import as_state, exporter, service_target
from placeflow.flows.tasks import as_task
from placeflow.runner.ending import Outcome
from placeflow.runner.research_due import (
    OWNER_FIELDS,
    PREFIX,
    research_ending,
    research_outcome,
)
from placeflow.store.warehouse import DEFAULT_DB

__all__ = ["OWNER_FIELDS", "PREFIX", "research_stale_places"]


@flow(name="research_stale_places", log_prints=False)
def research_stale_places(
    db: str = DEFAULT_DB,
    fields: list[str] | str | None = None,
    older_than: str = "30d",
    max_credits: int | None = None,
    limit: int | None = None,
    country: str | None = None,
    verify_identity: bool = False,
    validate_existence: bool = False,
    resend_uncertain: bool = False,
    export_to: ExportTo = None,
    pg_password_block: str | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> Any:
    """Research the warehouse's places whose research is `older_than` old, within a budget.

    `fields` are field specs as `placeflow research --field` takes them
    (`NAME[:TYPE[:A|B]]`), or the path of a YAML or JSON file of them (`--fields`); by default
    the owner lookup (`OWNER_FIELDS`: owner_person, owner_org). Returns the
    research summary as a dict (also the `research-summary` artifact); a research that did not
    complete (refused over `max_credits` or the balance, stopped part way, a failed export)
    returns a Failed state carrying the same dict and its exit code. With `export_to`, a
    completed research ends with an incremental export there, its PostgreSQL password from the
    Secret block `pg_password_block` or PGPASSWORD; an `export_to` holding a password is
    refused before anything is done (exit code 2). `on_event` is for a caller in this process.
    """
    db = warehouse_db(db)  # relative: under PLACEFLOW_HOME, the warehouse host's folder
    try:
        password = export_password(export_to, pg_password_block)
    except PlaceflowError as exc:
        data = {"status": "failed", "message": str(exc), "exit_code": exit_code(exc)}
        return as_state(Outcome(data, str(exc)))
    progress = ProgressArtifact(
        f"placeflow research of {db}", forward=on_event, key=f"{PREFIX}-progress"
    )
    told = PrefectEvents(db, kind="research", forward=progress)  # its facts, as events
    outcome = research_outcome(
        research_ending(publish, exporter(password)), service=service_target, db=db,
        fields=OWNER_FIELDS if fields is None else fields, older_than=older_than,
        max_credits=max_credits, limit=limit, country=country, verify_identity=verify_identity,
        validate_existence=validate_existence,
        resend_uncertain=resend_uncertain, export_to=export_to, on_event=told, step=as_task,
    )  # fmt: skip
    told.ended(outcome.data)
    return as_state(outcome)
