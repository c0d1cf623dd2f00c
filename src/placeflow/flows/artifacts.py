"""What a flow run leaves in the Prefect UI when a run or refresh ends: the markdown summary,
a table of rejects by reason, a table of the changes found, and a link to the HTML report
written beside the warehouse (`REPORTS/RUN_ID.html`), plus, when the flow loaded the warehouse
elsewhere (`export_to`), what the export sent.

What is published is gathered by `placeflow.reporting.published` (Prefect-free: a command run
without Prefect writes the same as files); this module, the Prefect publisher, only hands it to
Prefect. Keys are lowercase letters, digits and dashes, as `prefect artifact inspect KEY`
takes them; each flow run adds a new version under the same keys.
"""

from __future__ import annotations

import json
import re
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)

from placeflow.config import storage_settings
from placeflow.exporters.export import ExportSummary, export
from placeflow.pipeline.account import RunSummary
from placeflow.reporting import report_link
from placeflow.reporting.published import (
    REPORTS,
    Exported,
    Published,
    export_markdown,
    gather,
    report_path,
)
from placeflow.support.redact import Secret

__all__ = ["REPORTS", "Published", "artifact_key", "export_markdown", "publish", "report_path",
           "run_export"]  # fmt: skip
_KEY = re.compile(r"[^a-z0-9-]+")


def artifact_key(*parts: str) -> str:
    """A key Prefect accepts: the parts joined by dashes, lowercased, anything else a dash."""
    return _KEY.sub("-", "-".join(parts).lower()).strip("-")


def run_export(
    db: str, export_to: str, *, password: Secret | None
) -> tuple[ExportSummary | None, str | None]:
    """Load the warehouse's changes since the last export into `export_to` (incremental);
    the summary, or the error's text (the destination's password never appears in it)."""
    try:
        return export(db, export_to, password=password, storage=storage_settings()), None
    except Exception as exc:  # the run itself stands: the flow reports the export's failure
        text = str(exc)
        if password is not None and password.reveal():
            text = text.replace(password.reveal(), "***")
        return None, f"{type(exc).__name__}: {text}"


def publish(
    summary: RunSummary,
    *,
    db: str,
    prefix: str,
    description: str,
    exported: Exported | None = None,
) -> Published:
    """The Prefect publisher: the flow run's artifacts for `summary` under keys starting with
    `prefix`."""
    found = gather(summary, db, exported)
    done = found.done
    key = artifact_key(prefix, "summary")
    create_markdown_artifact(key=key, markdown=found.markdown, description=description)
    done.keys["summary"] = key
    run_id = summary.run_id
    if done.report_error:
        get_run_logger().warning(
            "placeflow: no tables or report for %s: %s", run_id, done.report_error
        )
    if not found.tables:
        return done
    key = artifact_key(prefix, "rejects")
    create_table_artifact(
        key=key,
        table=found.rejects,
        description=f"rejected rows of {run_id} by field and reason, most frequent first",
    )
    done.keys["rejects"] = key
    key = artifact_key(prefix, "changes")
    create_table_artifact(
        key=key,
        table=found.changes,
        description=f"changes found by {run_id} (the first {len(found.changes)}; empty: none)",
    )
    done.keys["changes"] = key
    info = found.report
    if info is not None:
        link = report_link(info.path, run_id)
        key = artifact_key(prefix, "report")
        create_link_artifact(
            key=key,
            link=link["link"],
            link_text=link["link_text"],
            description=f"HTML report of {run_id} ({info.bytes:,} bytes; opens offline)",
        )
        done.keys["report"] = key
    return done


RESULT = "place-refresh-result"
"""The key of a run's result artifact: its summary dict (with `exit_code`) as JSON, what a
submitter on another machine prints (`placeflow run --deployment`): a flow run's return value
stays on the worker's machine, an artifact is the server's."""


def publish_result(data: dict[str, Any]) -> None:
    """The run's result dict as an artifact of the flow run (see `RESULT`)."""
    body = json.dumps(data, sort_keys=True, default=str)
    create_markdown_artifact(
        key=RESULT, markdown=f"```json\n{body}\n```", description="the run's result (JSON)"
    )


def read_result(markdown: str) -> dict[str, Any] | None:
    """The result dict of a `RESULT` artifact's markdown (None: not one)."""
    body = markdown.strip().removeprefix("```json").removesuffix("```").strip()
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
