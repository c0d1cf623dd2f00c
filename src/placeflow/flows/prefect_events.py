"""A run's facts told to Prefect as events (`prefect.events.emit_event`), so automations can
react to spend, refusals and failures: the Prefect side of the library's event callback.

The library reports typed events (`placeflow.events`) to an `on_event` callback and knows nothing
of Prefect; the flows (`run_files`, `refresh_stale_places`, `research_stale_places`) pass this
one in, so the events go out whenever a run is carried out under a Prefect API, and never
otherwise (nothing here is imported by the library). Every event names the run
(`placeflow.run.RUN_ID`) and the warehouse (`placeflow.warehouse.PATH`, role `warehouse`) as
resources; Prefect adds the flow run's own. Names and payloads:

    placeflow.run.started           kind, credits_estimated, resumed
    placeflow.credits.charged       chunk_no, charged, released (one per settled chunk)
    placeflow.run.waiting           owners (run -> places still to come), seconds
    placeflow.run.claims-ended      left (run -> places still without an answer)
    placeflow.budget.threshold      per, for, credits, spent, left, warn_at, period_end
    placeflow.run.<status>          at its end: completed, refused, failed, interrupted,
                                    left_to_other_run, ... with exit_code, message, charged

`ended` sends the last one and waits for Prefect's events worker to send every event before
the flow returns (so a process that exits next loses none).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from prefect.events import emit_event
from prefect.events.worker import EventsWorker

from placeflow.events import (
    BudgetThreshold,
    ClaimsEnded,
    ClaimsWaiting,
    CreditsCharged,
    Event,
    RunStarted,
)

PREFIX = "placeflow"


def warehouse_resource(db: str) -> dict[str, str]:
    path = str(Path(db).resolve())
    return {
        "prefect.resource.id": f"{PREFIX}.warehouse.{path}",
        "prefect.resource.role": "warehouse",
        "prefect.resource.name": path,
    }


class PrefectEvents:
    """An event callback (forwarding to `forward`) that sends a run's facts to Prefect."""

    def __init__(
        self, db: str, *, kind: str, forward: Callable[[Event], None] | None = None
    ) -> None:
        self.db = db
        self.kind = kind
        self.forward = forward
        self.run_id: str | None = None
        self.sent: list[str] = []
        """The names of the events sent (a test reads them)."""

    def __call__(self, event: Event) -> None:
        if self.forward is not None:
            self.forward(event)
        match event:
            case RunStarted(run_id, kind, credits, resumed):
                self.run_id, self.kind = run_id, kind
                self.emit("run.started", credits_estimated=credits, resumed=resumed)
            case CreditsCharged(chunk_no, charged, released):
                self.emit("credits.charged", chunk_no=chunk_no, charged=charged, released=released)
            case ClaimsWaiting(run_id, owners, seconds, message):
                self.run_id = run_id
                self.emit("run.waiting", owners=owners, seconds=seconds, message=message)
            case ClaimsEnded(run_id, left, message):
                self.emit("run.claims-ended", left=left, message=message)
            case BudgetThreshold() as b:
                self.emit(
                    "budget.threshold", per=b.per, applies_to=b.applies_to, credits=b.credits,
                    spent=b.spent, left=b.left, warn_at=b.warn_at, period_end=b.period_end,
                    message=b.message,
                )  # fmt: skip

    def emit(self, name: str, **payload: Any) -> None:
        """One event about the run (the warehouse when no run was opened) and the warehouse."""
        warehouse = warehouse_resource(self.db)
        if self.run_id is None:
            resource = {k: v for k, v in warehouse.items() if k != "prefect.resource.role"}
            related = []
        else:
            resource = {
                "prefect.resource.id": f"{PREFIX}.run.{self.run_id}",
                "prefect.resource.name": self.run_id,
                "placeflow.kind": self.kind,
            }
            related = [warehouse]
        emit_event(
            f"{PREFIX}.{name}", resource=resource, related=related,
            payload={"run_id": self.run_id, "kind": self.kind, "db": self.db, **payload},
        )  # fmt: skip
        self.sent.append(f"{PREFIX}.{name}")

    def ended(self, data: dict[str, Any]) -> None:
        """The run's end (its result dict), then every event sent before the flow returns."""
        self.run_id = data.get("run_id") or self.run_id
        status = str(data.get("status") or "failed")
        self.emit(
            f"run.{status}", status=status, exit_code=data.get("exit_code"),
            message=data.get("message"), charged=data.get("charged"),
            submitted=data.get("submitted"),
        )  # fmt: skip
        flush()


def flush() -> None:
    """Wait until Prefect's events worker has sent what it holds (it starts again on the next
    event); from synchronous code, as the flows are. The worker's "Still processing items"
    warnings while it drains are not the user's business (coloured, they reached a terminal
    under --quiet and CI): held back for the drain."""
    chatty = logging.getLogger(EventsWorker.__name__)  # Prefect names a service's logger so
    level = chatty.level
    chatty.setLevel(logging.ERROR)
    try:
        with suppress(RuntimeError):  # no worker was ever started: nothing to send
            drained = EventsWorker.drain_all(timeout=30, at_exit=False)
            if inspect.isawaitable(drained):  # only from async code, never the flows'
                drained.close()
    finally:
        chatty.setLevel(level)
