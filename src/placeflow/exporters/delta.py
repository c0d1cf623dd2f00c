"""Delta Lake destination (delta-rs: no JVM): one Delta table per exported table, rows merged by
key, the export's watermark committed with the rows.

Layout under the destination root (``delta:///srv/lake``)::

    places_latest/_delta_log/00000000000000000000.json   the table's commits
    places_latest/part-00001-....parquet                 its data files (delta-rs names them)

The first export of a table creates it (an empty one too, so readers find every table); each
later export merges its rows into it by the table's key (``MERGE``: a changed place is updated,
a new one inserted, never duplicated). Every commit carries `WATERMARK` (the highest incremental
value the export sent) in its commit info, so the destination's own log says how far exports
went, atomically with the rows: an export replayed after a crash sends nothing twice, and a
table deleted at the destination is sent whole again. Readers: `deltalake.DeltaTable`,
`polars.read_delta`, Spark, and DuckDB's delta extension where it can be installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from placeflow.exporters import ARROW_NATIVE, Step, TablePlan

BATCH_ROWS = 100_000
WATERMARK = "placeflow.watermark"
EXPORT_ID = "placeflow.export_id"
DELTA_NATIVE = ARROW_NATIVE - {"TIME"}
"""DuckDB types Delta holds as they are (Delta has no time of day: it travels as text)."""


@dataclass(frozen=True)
class Committed:
    rows: int
    version: int | None
    """The table's version after the export (None when nothing was committed)."""


def table_columns(root: Path, table: str) -> set[str] | None:
    """The columns of the destination's Delta table (None: no such table)."""
    from deltalake import DeltaTable

    path = root / table
    if not (path / "_delta_log").is_dir():
        return None
    return {f.name for f in DeltaTable(str(path)).schema().fields}


def table_watermark(root: Path, table: str) -> datetime | None:
    """The watermark of the table's newest placeflow commit (None: no such table, or none)."""
    from deltalake import DeltaTable

    path = root / table
    if not (path / "_delta_log").is_dir():
        return None
    log = DeltaTable(str(path))
    # newest first; the newest commit is placeflow's unless someone optimized the table since
    for limit in (1, None):
        for commit in log.history(limit):
            value = commit.get(WATERMARK)
            if value:
                return datetime.fromisoformat(str(value))
    return None


def load_table(
    con: duckdb.DuckDBPyConnection, root: Path, plan: TablePlan, *, export_id: str, step: Step
) -> Committed:
    """Create the table or merge the plan's rows into it by key, in one commit that carries the
    watermark; nothing is committed when the table exists and no row changed."""
    from deltalake import CommitProperties, DeltaTable, write_deltalake

    path = root / plan.name
    exists = (path / "_delta_log").is_dir()
    if exists and plan.rows == 0:
        return Committed(0, None)
    metadata = {EXPORT_ID: export_id}
    if plan.upper is not None:
        metadata[WATERMARK] = plan.upper.isoformat()
    commit = CommitProperties(custom_metadata=metadata)
    reader = con.sql(plan.select(native=DELTA_NATIVE)).to_arrow_reader(BATCH_ROWS)
    if not exists:
        path.mkdir(parents=True, exist_ok=True)
        write_deltalake(str(path), reader, mode="append", commit_properties=commit)
    else:
        match = " and ".join(f't."{k}" = s."{k}"' for k in plan.key)
        (
            DeltaTable(str(path))
            .merge(
                reader,
                predicate=match,
                source_alias="s",
                target_alias="t",
                merge_schema=True,
                commit_properties=commit,
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
    step(f"delta:committed:{plan.name}")
    return Committed(plan.rows, DeltaTable(str(path)).version())
