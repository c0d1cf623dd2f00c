"""Delta Lake destination (delta-rs: no JVM): one Delta table per exported table, rows merged by
key, the export's watermark committed with the rows.

Layout under the destination root (``delta:///srv/lake``, or ``delta+s3://bucket/lake`` in object
storage, whose commits delta-rs keeps apart with conditional puts)::

    places_latest/_delta_log/00000000000000000000.json   the table's commits
    places_latest/part-00001-....parquet                 its data files (delta-rs names them)

The first export of a table creates it empty (an empty one stays, so readers find every table)
and every export merges its rows into it by the table's key (``MERGE``: a changed place is
updated, a new one inserted, never duplicated). Two exports that meet, the first two at once
among them, are settled by Delta's own commit protocol: the table is created without a row, and
a merge whose commit finds another's since it read the table is run again over the table as it
now is (never a blind append, which would write every place twice). `--full` replaces a table's
rows in one commit (an overwrite), which also repairs a table holding a place twice. Every
commit carries `WATERMARK` (the highest incremental value the export sent) in its commit info,
so the destination's own log says how far exports went, atomically with the rows: an export
replayed after a crash sends nothing twice, and a table deleted at the destination is sent
whole again. Readers: `deltalake.DeltaTable`, `polars.read_delta`, Spark, and DuckDB's delta
extension where it can be installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from placeflow.exporters import ARROW_NATIVE, Step, TablePlan

if TYPE_CHECKING:
    from deltalake import DeltaTable

BATCH_ROWS = 100_000
MERGE_ATTEMPTS = 8
"""Times a merge is run when another export's commit keeps coming between its read and its
commit (each run reads the table anew)."""
WATERMARK = "placeflow.watermark"
EXPORT_ID = "placeflow.export_id"
DELTA_NATIVE = ARROW_NATIVE - {"TIME"}
"""DuckDB types Delta holds as they are (Delta has no time of day: it travels as text)."""


@dataclass(frozen=True)
class Committed:
    rows: int
    version: int | None
    """The table's version after the export (None when nothing was committed)."""


@dataclass(frozen=True)
class Lake:
    """A destination root: a local folder, or a URL in object storage (``s3://bucket/prefix``)
    with delta-rs's storage options (`placeflow.support.objects.Storage.delta_options`)."""

    root: str
    options: dict[str, str] | None = None

    def uri(self, table: str) -> str:
        return f"{self.root.rstrip('/')}/{table}"

    def exists(self, table: str) -> bool:
        from deltalake import DeltaTable

        if self.options is None:
            return (Path(self.root) / table / "_delta_log").is_dir()
        return bool(DeltaTable.is_deltatable(self.uri(table), storage_options=self.options))

    def table(self, name: str) -> DeltaTable:
        from deltalake import DeltaTable

        return DeltaTable(self.uri(name), storage_options=self.options)

    def made(self, name: str) -> str:
        """The table's URI, its folder made first when it is local."""
        if self.options is None:
            Path(self.uri(name)).mkdir(parents=True, exist_ok=True)
        return self.uri(name)


def table_columns(lake: Lake, table: str) -> set[str] | None:
    """The columns of the destination's Delta table (None: no such table)."""
    if not lake.exists(table):
        return None
    return {f.name for f in lake.table(table).schema().fields}


def table_watermark(lake: Lake, table: str) -> datetime | None:
    """The watermark of the table's newest placeflow commit (None: no such table, or none)."""
    if not lake.exists(table):
        return None
    log = lake.table(table)
    # newest first; the newest commit is placeflow's unless someone optimized the table since
    for limit in (1, None):
        for commit in log.history(limit):
            value = commit.get(WATERMARK)
            if value:
                return datetime.fromisoformat(str(value))
    return None


def _create(lake: Lake, name: str, empty: Any, commit: Any) -> None:
    """Create the table from `empty` (the plan's columns, no row) unless it exists. Two exports
    that create it at once each commit nothing but the table's schema (an empty append: no row
    to write twice); Delta's commit protocol orders the two commits."""
    from deltalake import write_deltalake

    write_deltalake(
        lake.made(name), empty, mode="append", commit_properties=commit,
        storage_options=lake.options,
    )  # fmt: skip


def _merge(con: duckdb.DuckDBPyConnection, lake: Lake, plan: TablePlan, commit: Any) -> None:
    """Merge the plan's rows into the table by key, in one commit. A commit another export
    made since this one read the table (two first exports at once: both found it empty) is a
    conflict: the merge is run again over the table as it now is, so each row is updated,
    never inserted twice."""
    from deltalake.exceptions import CommitFailedError

    match = " and ".join(f't."{k}" = s."{k}"' for k in plan.key)
    for attempt in range(1, MERGE_ATTEMPTS + 1):
        reader = con.sql(plan.select(native=DELTA_NATIVE)).to_arrow_reader(BATCH_ROWS)
        try:
            (
                lake.table(plan.name)
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
            return
        except CommitFailedError:
            if attempt == MERGE_ATTEMPTS:
                raise


def load_table(
    con: duckdb.DuckDBPyConnection,
    lake: Lake,
    plan: TablePlan,
    *,
    export_id: str,
    step: Step,
    full: bool = False,
) -> Committed:
    """Merge the plan's rows into the table by key (created first when absent), in one commit
    that carries the watermark; nothing is committed when the table exists and no row changed.
    With `full`, the table's rows are replaced by the plan's in one commit (an overwrite: a
    table that holds a row twice, from before exports were merged, is repaired)."""
    from deltalake import CommitProperties, write_deltalake

    exists = lake.exists(plan.name)
    if exists and plan.rows == 0 and not full:
        return Committed(0, None)
    metadata = {EXPORT_ID: export_id}
    if plan.upper is not None:
        metadata[WATERMARK] = plan.upper.isoformat()
    commit = CommitProperties(custom_metadata=metadata)
    select = plan.select(native=DELTA_NATIVE)
    if full:
        reader = con.sql(select).to_arrow_reader(BATCH_ROWS)
        write_deltalake(
            lake.made(plan.name), reader, mode="overwrite", schema_mode="overwrite",
            commit_properties=commit, storage_options=lake.options,
        )  # fmt: skip
    elif plan.rows == 0:  # a new table, empty: created with the watermark
        _create(lake, plan.name, con.sql(select).limit(0).to_arrow_table(), commit)
    else:
        if not exists:  # created empty (no watermark: the merge's commit carries it)
            empty = con.sql(select).limit(0).to_arrow_table()
            _create(
                lake, plan.name, empty, CommitProperties(custom_metadata={EXPORT_ID: export_id})
            )
        _merge(con, lake, plan, commit)
    step(f"delta:committed:{plan.name}")
    return Committed(plan.rows, lake.table(plan.name).version())
