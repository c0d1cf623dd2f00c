"""What a flow run leaves in the Prefect UI when a run or refresh ends: the markdown summary,
a table of rejects by reason, a table of the changes found, and a link to the HTML report
written beside the warehouse (`REPORTS/RUN_ID.html`), plus, when the flow loaded the warehouse
elsewhere (`export_to`), what the export sent.

The rows come from `placeflow.reporting` (aggregated in DuckDB); this module only hands them
to Prefect. Keys are lowercase letters, digits and dashes, as `prefect artifact inspect KEY`
takes them; each flow run adds a new version under the same keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)

from placeflow.export import ExportSummary, export
from placeflow.pipeline.account import RunSummary
from placeflow.redact import Secret
from placeflow.reporting import changes_table, rejects_table, report_link, write_report
from placeflow.reporting.summary import markdown_summary
from placeflow.warehouse import MEMORY, reading

REPORTS = "reports"
"""The folder, beside the warehouse file, that holds the flows' HTML reports."""
_KEY = re.compile(r"[^a-z0-9-]+")


def artifact_key(*parts: str) -> str:
    """A key Prefect accepts: the parts joined by dashes, lowercased, anything else a dash."""
    return _KEY.sub("-", "-".join(parts).lower()).strip("-")


def report_path(db: str, run_id: str) -> Path | None:
    """Where a flow writes a run's report: REPORTS/RUN_ID.html beside the warehouse file
    (None for an in-memory warehouse)."""
    if db == MEMORY:
        return None
    return Path(db).expanduser().resolve().parent / REPORTS / f"{run_id}.html"


@dataclass
class Published:
    """What `publish` handed to Prefect (the keys of each artifact), for the flow's result."""

    keys: dict[str, str] = field(default_factory=dict)
    report: str | None = None
    export: dict[str, Any] | None = None
    export_error: str | None = None
    report_error: str | None = None


def export_markdown(summary: ExportSummary) -> str:
    """The export's lines of the markdown summary: destination (redacted), rows per table."""
    lines = [
        "",
        f"**Export** `{summary.export_id}` to `{summary.destination}`"
        f" ({'full' if summary.full else 'incremental'}): {summary.rows:,} rows",
        "",
        "| table | rows |",
        "|---|---:|",
    ]
    lines += [
        f"| {t.table} | {t.rows:,}"
        + (f" ({t.made_safe:,} values made safe for the destination)" if t.made_safe else "")
        + " |"
        for t in summary.tables
    ]
    if summary.missing:
        lines += ["", f"Not in this warehouse: {', '.join(summary.missing)}."]
    return "\n".join(lines)


def run_export(
    db: str, export_to: str, *, password: Secret | None
) -> tuple[ExportSummary | None, str | None]:
    """Load the warehouse's changes since the last export into `export_to` (incremental);
    the summary, or the error's text (the destination's password never appears in it)."""
    try:
        return export(db, export_to, password=password), None
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
    exported: tuple[ExportSummary | None, str | None] | None = None,
) -> Published:
    """Create the flow run's artifacts for `summary` under keys starting with `prefix`."""
    done = Published()
    markdown = markdown_summary(summary)
    if exported is not None:
        result, error = exported
        if result is not None:
            markdown += "\n" + export_markdown(result)
            done.export = result.as_dict()
        else:
            markdown += f"\n\n**Export failed**: {error}"
            done.export_error = error
    key = artifact_key(prefix, "summary")
    create_markdown_artifact(key=key, markdown=markdown, description=description)
    done.keys["summary"] = key
    if db == MEMORY:
        return done
    run_id = summary.run_id
    try:
        with reading(db) as con:
            rejects = rejects_table(con, run_id)
            changes = changes_table(con, run_id)
            out = report_path(db, run_id)
            info = write_report(con, run_id, out) if out is not None else None
    except Exception as exc:  # the run's outcome stands; the summary artifact is published
        done.report_error = f"{type(exc).__name__}: {exc}"
        get_run_logger().warning("placeflow: no tables or report for %s: %s", run_id, exc)
        return done
    key = artifact_key(prefix, "rejects")
    create_table_artifact(
        key=key,
        table=rejects,
        description=f"rejected rows of {run_id} by field and reason, most frequent first",
    )
    done.keys["rejects"] = key
    key = artifact_key(prefix, "changes")
    create_table_artifact(
        key=key,
        table=changes,
        description=f"changes found by {run_id} (the first {len(changes)}; empty: none)",
    )
    done.keys["changes"] = key
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
        done.report = str(info.path)
    return done
