"""Staging: the prepare stages' working tables, kept by DuckDB so that memory stays bounded.

Inputs are read and normalised in batches; what each batch leaves is appended to a temporary
table, and the stages after work on those tables in SQL (DuckDB spills to disk past its memory
limit), so a run holds one batch of rows in polars at a time, whatever the input's size:

    read (batches) ─▶ normalize + keys (per batch) ─▶ PLACES, REJECTS
    dedupe:  PLACES  ─▶ DEDUPED   (place_key of the answering place, own_key, disposition,
                                   audit columns), MATCHED (the fuzzy merges, their evidence)
    fresh:   DEDUPED ─▶ MARKED    (skipped_fresh / held_failing, outcome_key)
    plan:    MARKED  ─▶ REQUESTS  (each place's request, chunk_no, position)
    open:    MARKED, MATCHED, REJECTS, REQUESTS ─▶ run_rows, run_matches, rejects,
                                                 run_places, jobs

The tables are temporary (the connection's own; a read-only warehouse can hold them too) and
dropped once the next stage has its own. With no warehouse, a scratch in-memory database serves.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from placeflow.fields import BATCH_ROWS
from placeflow.state.records import TABLES
from placeflow.store.dbfile import has_table
from placeflow.store.warehouse import settings
from placeflow.support.arrow import fetched, scannable

MEMORY_LIMIT = "512MB"
"""DuckDB's memory for the staging work (it spills past it to its temporary directory)."""
MOVE_LIMIT = "128MB"
"""The memory of a staging its tables are moved out of (`Staging.move_to`): it only scans them.
At MEMORY_LIMIT, the scratch's pool, full from the dedupe, stayed full while the warehouse's
filled with the copy: two pools at once were a large run's peak (2.5M rows: 1,430 MB against
1,080 with this cap, for the same CPU)."""
MOVE_INTO_LIMIT = "256MB"
"""The memory of the staging the tables are moved into, meanwhile: the copy spills sooner, and
the fresh stage reads it back once either way (2.5M rows: the move's peak 1,060-1,090 MB with
MEMORY_LIMIT there, 830 with this cap, its CPU and the fresh stage's alike)."""


@contextmanager
def capped(con: duckdb.DuckDBPyConnection, limit: str) -> Iterator[None]:
    """The block with DuckDB's memory capped at `limit` (its own cap back after), where it can
    be: a pool holding more than `limit` that it cannot give up at once (a scratch database
    holding a plan of ten million places) keeps its own cap, which bounds it as well."""
    with ExitStack() as stack:
        with suppress(duckdb.OutOfMemoryException):  # not lowered: at the connection's own cap
            stack.enter_context(settings(con, memory_limit=limit))
        yield


class Staging:
    """The staging tables of one prepare, on `con`; `warehouse` says whether `con` is the
    warehouse (the fresh stage looks there for earlier outcomes) or a scratch database."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, warehouse: bool) -> None:
        self.con = con
        self.warehouse = warehouse

    @classmethod
    @contextmanager
    def scratch(cls) -> Iterator[Staging]:
        """An in-memory database of its own (spilling to a temporary directory), closed after."""
        with tempfile.TemporaryDirectory(prefix="placeflow-staging-") as spill:
            con = duckdb.connect(":memory:", config={"temp_directory": str(Path(spill))})
            try:
                yield cls(con, warehouse=False)
            finally:
                con.close()

    def move_to(self, other: Staging, *tables: str) -> None:
        """Copy `tables` into `other`'s staging (streamed as Arrow batches, so memory holds a
        batch), and drop them here; this side's DuckDB capped at MOVE_LIMIT meanwhile, the
        other's at MOVE_INTO_LIMIT (each writer's own cap back after)."""
        with (
            capped(self.con, MOVE_LIMIT),
            capped(other.con, MOVE_INTO_LIMIT),
        ):
            for table in tables:
                reader = self.con.sql(f"select * from {table}").to_arrow_reader(BATCH_ROWS)  # noqa: S608 - our table names
                view = f"pf_moved_{secrets.token_hex(4)}"
                other.con.register(view, reader)
                try:
                    other.create(table, f"select * from {view}")  # noqa: S608 - our names
                finally:
                    other.con.unregister(view)
                self.drop(table)

    def limited(self, limit: str = MEMORY_LIMIT) -> AbstractContextManager[None]:
        """The block runs with DuckDB's memory capped at `limit` where it can be (`capped`;
        spilling past it); a writer's own setting (WAREHOUSE_SETTINGS) comes back after."""
        return capped(self.con, limit)

    def append(self, table: str, frame: pl.DataFrame) -> None:
        """Append a frame to a staging table, creating it (with the frame's columns) if new.
        An empty frame still creates the table, so the stages after always find it."""
        view = f"pf_batch_{secrets.token_hex(4)}"
        self.con.register(view, scannable(frame))
        try:
            if self.exists(table):
                self.con.execute(f"insert into {table} by name select * from {view}")  # noqa: S608 - our table names, a random view's
            else:
                self.con.execute(f"create temp table {table} as select * from {view}")  # noqa: S608 - our table names, a random view's
        finally:
            self.con.unregister(view)

    def create(self, table: str, sql: str, params: dict[str, Any] | None = None) -> None:
        """(Re)create a staging table as the result of `sql`."""
        self.con.execute(f"create or replace temp table {table} as {sql}", params or {})

    def exists(self, table: str) -> bool:
        return has_table(self.con, f"temp.{table}")

    def has_column(self, table: str, column: str) -> bool:
        """Whether `table` has `column` (asked of that table alone: `duckdb_columns()` binds
        every view of the warehouse to list theirs, 20-50 ms on a connection just opened)."""
        try:
            found = self.con.execute(
                "select count(*) from pragma_table_info(?) where name = ?", [table, column]
            ).fetchall()
        except duckdb.CatalogException:  # no such table
            return False
        return bool(found[0][0])

    def count(self, table: str, where: str = "true") -> int:
        found = self.con.execute(f"select count(*) from {table} where {where}").fetchall()  # noqa: S608 - our tables and conditions, never input
        return int(found[0][0])

    def frame(self, table: str, *, order_by: str = "row_ord") -> pl.DataFrame:
        """A whole staging table as a frame (small inputs and tests), in `order_by` order."""
        return self.query(f"select * from {table} order by {order_by}")  # noqa: S608 - our tables and columns, never input

    def query(self, sql: str, params: dict[str, Any] | None = None) -> pl.DataFrame:
        """The result of `sql` as a frame."""
        out: pl.DataFrame = fetched(self.con.sql(sql, params=params or {}))
        return out

    def batches(self, sql: str, rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
        """The result of `sql` as frames of up to `rows` rows, in its order, read as they are
        wanted (one batch held at a time)."""
        reader = self.con.sql(sql).to_arrow_reader(rows)
        for batch in reader:
            yield pl.DataFrame(batch)  # a record batch: always a frame (from_arrow may be a Series)

    def drop(self, *tables: str) -> None:
        for table in tables:
            self.con.execute(f"drop table if exists {table}")

    def close(self) -> None:
        """Drop every staging table (their rows are in the run's tables by now, or unneeded)."""
        self.drop(*TABLES)
