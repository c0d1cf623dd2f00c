"""What a run report shows, aggregated in DuckDB by sql/queries/report_*.sql.

Every figure is computed in the warehouse; Python receives only aggregates and bounded
samples (the map's points, the first jobs, the first changes), whatever the run's size. The
requests' JSON is parsed once per report, into a temporary table (report_places) that the
outcome counts and the map read; a read-only connection may hold it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from placeflow.errors import UnknownRun
from placeflow.store import dbfile
from placeflow.store.warehouse import sql_text

MAP_POINTS = 5_000
"""Most places drawn on the map (a repeatable sample when the run has more)."""
TOP_REASONS = 8
"""Reject reasons shown one by one; the rest are summed as 'other reasons'."""
JOB_LIMIT = 400
"""Most chunks drawn on the timeline and the per-job credits (the first ones)."""
CHANGES_LIMIT = 25
"""Changes listed in the refresh section's table."""

Row = dict[str, Any]


@dataclass(frozen=True)
class ReportData:
    """The aggregates of one run, ready to draw."""

    run: Row
    rejects: list[Row]
    outcomes: list[Row]
    confidence: list[Row]
    verdicts: list[Row]
    jobs: list[Row]
    points: list[Row]
    changes: list[Row] = field(default_factory=list)
    first_changes: list[Row] = field(default_factory=list)
    answers: list[Row] = field(default_factory=list)
    """A research run's answers per field by status and by confidence (measure, field, value,
    answers); empty for other runs."""

    @property
    def research(self) -> bool:
        """Whether the run is a research run (its chunks are requests, its answers fields)."""
        return bool(self.run["mode"] == "research")

    @property
    def countries(self) -> list[str]:
        """The countries of the run's places, most places first ('' when the input had none)."""
        totals: dict[str, int] = {}
        for row in self.outcomes:
            totals[row["country"]] = totals.get(row["country"], 0) + int(row["places"])
        return sorted(totals, key=lambda c: (-totals[c], c))

    @property
    def located(self) -> int:
        """How many of the run's places have coordinates (the map draws a sample of them)."""
        return int(self.points[0]["located"]) if self.points else 0


def query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[Row]:
    """The rows of sql/queries/<name>.sql as dicts, with named parameters."""
    cur = con.execute(sql_text(f"queries/{name}"), params)
    names = [d[0] for d in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def has_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the warehouse has the table (a newer migration may add it)."""
    return dbfile.has_table(con, f"main.{table}")


def collect(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    map_points: int = MAP_POINTS,
    top_reasons: int = TOP_REASONS,
    job_limit: int = JOB_LIMIT,
    changes_limit: int = CHANGES_LIMIT,
) -> ReportData:
    """Aggregate one run for its report; `UnknownRun` (a LookupError) when the warehouse has no
    such run."""
    con.execute("set enable_progress_bar = false")  # a report prints nothing but its result
    run = query(con, "report_run", run_id=run_id)
    if not run:
        raise UnknownRun(f"no run {run_id} in this database: `placeflow runs` lists them")
    changes: list[Row] = []
    first_changes: list[Row] = []
    if has_table(con, "place_changes"):
        changes = query(con, "report_changes", run_id=run_id)
        if changes:
            first_changes = query(con, "report_changes_first", run_id=run_id, limit=changes_limit)
    con.execute(sql_text("queries/report_places"), {"run_id": run_id})  # a temporary table
    try:
        outcomes = query(con, "report_outcomes")
        points = query(con, "report_map", points=map_points)
    finally:
        con.execute("drop table if exists temp.report_places")
    research = run[0]["mode"] == "research"
    chunks = "report_research_requests" if research else "report_jobs"
    return ReportData(
        run=run[0],
        rejects=query(con, "report_rejects", run_id=run_id, top=top_reasons),
        outcomes=outcomes,
        confidence=query(con, "report_confidence", run_id=run_id),
        verdicts=query(con, "report_verdicts", run_id=run_id),
        jobs=query(con, chunks, run_id=run_id, limit=job_limit),
        points=points,
        changes=changes,
        first_changes=first_changes,
        answers=query(con, "report_research_answers", run_id=run_id) if research else [],
    )
