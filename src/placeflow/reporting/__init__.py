"""Run reports: one self-contained HTML page per run, the `runs` listing, and the plain
tables a flow publishes as artifacts. Aggregation happens in DuckDB (sql/queries/report_*)."""

from __future__ import annotations

from placeflow.reporting.build import ReportInfo, write_report
from placeflow.reporting.data import ReportData, collect
from placeflow.reporting.listing import (
    changes_table,
    rejects_table,
    report_link,
    runs_table,
)

__all__ = [
    "ReportData",
    "ReportInfo",
    "changes_table",
    "collect",
    "rejects_table",
    "report_link",
    "runs_table",
    "write_report",
]
