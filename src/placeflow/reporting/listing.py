"""Plain tables about runs: the `placeflow runs` listing and the rows a flow publishes as
Prefect artifacts (the flow wires them; nothing here imports Prefect)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import duckdb

from placeflow.reporting.data import Row, has_table, query

RUNS_COLUMNS = (
    ("run_id", "run"),
    ("created_at", "started (UTC)"),
    ("status", "status"),
    ("mode", "mode"),
    ("rows_read", "read"),
    ("rejected", "rejected"),
    ("duplicates", "dups"),
    ("skipped_fresh", "fresh"),
    ("submitted", "sent"),
    ("succeeded", "ok"),
    ("failed", "failed"),
    ("credits_estimated", "est."),
    ("credits_charged", "charged"),
    ("usage_delta", "usage Δ"),
    ("duration_s", "seconds"),
    ("changes", "changes"),
)
"""The listing's columns (key in each row, header in the text table), in order."""


def runs_table(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[Row]:
    """The newest runs, newest first: status, rows, outcomes, credits, duration and changes
    (null where the warehouse has no change history)."""
    rows = query(con, "report_runs", limit=limit)
    counts: dict[str, int] = {}
    if rows and has_table(con, "place_changes"):
        found = query(con, "report_runs_changes", run_ids=[r["run_id"] for r in rows])
        counts = {r["run_id"]: int(r["changes"]) for r in found}
        for r in rows:
            r["changes"] = counts.get(r["run_id"], 0)
    else:
        for r in rows:
            r["changes"] = None
    return rows


def runs_json_rows(rows: list[Row]) -> list[dict[str, Any]]:
    """The listing's rows with JSON-ready values (timestamps as ISO 8601 UTC)."""
    out = []
    for r in rows:
        created = r["created_at"]
        out.append({**r, "created_at": created.astimezone(UTC).isoformat() if created else None})
    return out


def format_runs(rows: list[Row]) -> str:
    """The listing as an aligned text table (numbers right-aligned)."""

    def text(key: str, value: Any) -> str:
        if value is None:
            return ""
        if key == "created_at":
            return str(value.astimezone(UTC).strftime("%Y-%m-%d %H:%M"))
        if isinstance(value, float):
            return f"{value:,.1f}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    table = [[h for _, h in RUNS_COLUMNS]]
    table += [[text(k, r.get(k)) for k, _ in RUNS_COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(RUNS_COLUMNS))]
    numeric = {i for i, (k, _) in enumerate(RUNS_COLUMNS) if i >= 4}
    lines = []
    for row in table:
        cells = [
            v.rjust(w) if i in numeric else v.ljust(w)
            for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def rejects_table(con: duckdb.DuckDBPyConnection, run_id: str, top: int = 50) -> list[Row]:
    """Rejected rows by field and reason, most frequent first ({field, reason, rows}): the
    rows of a table artifact."""
    found = query(con, "report_rejects", run_id=run_id, top=top)
    return [{"field": r["field"], "reason": r["reason"], "rows": int(r["rows"])} for r in found]


def changes_table(con: duckdb.DuckDBPyConnection, run_id: str, limit: int = 100) -> list[Row]:
    """The run's first changes ({detected_at, place_key, place_name, field, old_value,
    new_value}, timestamps as ISO text); empty when the warehouse has no change history."""
    if not has_table(con, "place_changes"):
        return []
    found = query(con, "report_changes_first", run_id=run_id, limit=limit)
    return [
        {**r, "detected_at": r["detected_at"].isoformat() if r["detected_at"] else None}
        for r in found
    ]


def report_link(path: Path | str, run_id: str) -> dict[str, str]:
    """A link artifact's fields for a written report: {link (file:// URL), link_text}."""
    return {
        "link": Path(path).resolve().as_uri(),
        "link_text": f"placeflow run report {run_id}",
    }
