"""Write one run's report: aggregate in DuckDB, draw, and write the page atomically."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from placeflow.reporting.data import collect
from placeflow.reporting.page import render


@dataclass(frozen=True)
class ReportInfo:
    """Where the report went, how big it is, and which optional sections it has."""

    run_id: str
    path: Path
    bytes: int
    sections: tuple[str, ...]


def write_report(con: duckdb.DuckDBPyConnection, run_id: str, out: Path | str) -> ReportInfo:
    """Write the HTML report of `run_id` to `out` (replaced whole, never half-written)."""
    data = collect(con, run_id)
    page = render(data).encode("utf-8")
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.write_bytes(page)
    partial.replace(target)
    found = "answers" if data.research else "outcomes"
    sections = ["summary", "funnel", found, "credits", "timeline"]
    sections += ["changes"] if data.changes else []
    sections += ["map"] if data.points else []
    return ReportInfo(run_id=run_id, path=target, bytes=len(page), sections=tuple(sections))
