"""Warehouse loads: the place tables to Parquet files, Delta tables or PostgreSQL, incrementally.

    export(db, "file:///lake", ["places_latest"])           -> ExportSummary
    export(db, "delta:///lake")
    export(db, "postgresql://etl@db:5432/analytics", password=Secret(...))

Each table of `TABLES` names its key and its incremental column (a timestamp expression): an
export sends the rows whose incremental value lies above the destination's watermark for the
table, up to the highest value present when it started; `full=True` sends every row. The
warehouse records per destination (redacted: never a password) and table how far exports went
(`export_state`, `export_log`), only after the destination committed:

- Parquet (a directory or ``file://`` URL): see `exporters.parquet`; the destination's manifest
  is its commit point and its own watermark, the warehouse mirrors it.
- Delta (``delta://``): see `exporters.delta`; rows merged by key, each table's commit carries
  its watermark (the destination's own record, as Parquet's manifest).
- PostgreSQL (``postgresql://``): see `exporters.postgres`; one transaction per export, rows
  merged by key, so an export replayed after a crash between commit and record changes nothing.

A destination URL carrying a password is refused (`exporters.destination`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote as url_quote

import duckdb

from placeflow.errors import ExportError, OptionsError
from placeflow.exporters import Column, Step, TablePlan, quote, timestamp_literal
from placeflow.exporters.destination import Destination, lake_of, parquet_files, parse_destination
from placeflow.exporters.failures import is_panic, rust_panics_kept_off_stderr, why
from placeflow.exporters.summary import ExportSummary, TableExport
from placeflow.exporters.tables import DEFAULT_TABLES, TABLES, TableSpec
from placeflow.exporters.textsafe import Tally
from placeflow.store.warehouse import connect, reading, settings, sql_text, transaction
from placeflow.support.objects import Storage
from placeflow.support.redact import Secret, redact_text

if TYPE_CHECKING:
    from placeflow.exporters.delta import Lake
    from placeflow.exporters.parquet import ParquetFiles


__all__ = [
    "DEFAULT_TABLES",
    "TABLES",
    "Destination",
    "ExportSummary",
    "TableExport",
    "TableSpec",
    "estimate",
    "export",
    "parse_destination",
    "plan_table",
]


EXPORT_MEMORY = 4 * 2**30
"""DuckDB's memory while an export reads its tables (half the machine's, where that is less):
under the writer's cap (512 MB) places_latest's aggregates at a million places failed with "Out
of Memory", and at 2 GB they spilled to disk for twice the time. An export, unlike a run, is one
bounded read: the cap comes back after it."""


def export_memory_limit() -> str:
    """EXPORT_MEMORY, or half the machine's physical memory when that is less, as DuckDB
    takes it."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system that says
        total = 2 * EXPORT_MEMORY
    return f"{min(EXPORT_MEMORY, total // 2) // 2**20}MB"


def _noop(_: str) -> None:
    return None


def export(
    db: duckdb.DuckDBPyConnection | Path | str,
    dest: str,
    tables: Sequence[str] | None = None,
    *,
    full: bool = False,
    password: Secret | None = None,
    now: datetime | None = None,
    step: Step = _noop,
    storage: Storage | None = None,
) -> ExportSummary:
    """Send what changed since the last export to `dest` (everything with `full`); `storage`
    reaches an ``s3://`` or ``delta+s3://`` destination."""
    destination = parse_destination(dest, password)
    storage = storage or Storage()
    folder = destination.path
    if folder is not None and folder.exists() and not folder.is_dir():
        raise OptionsError(
            f"{folder} is a file: give a folder (each table's Parquet files go under DEST/<table>/)"
        )
    unknown = [t for t in tables or () if t not in TABLES]
    if unknown:
        raise OptionsError(
            f"cannot export {', '.join(unknown)}: placeflow exports {', '.join(TABLES)}"
        )
    at = now or datetime.now(UTC)
    export_id = f"exp_{at:%Y%m%dT%H%M%S}_{secrets.token_hex(3)}"
    if isinstance(db, duckdb.DuckDBPyConnection):
        return _export(db, destination, tables, full, at, export_id, step, storage)
    con = connect(db)
    try:
        return _export(con, destination, tables, full, at, export_id, step, storage)
    finally:
        con.close()


def _export(
    con: duckdb.DuckDBPyConnection,
    destination: Destination,
    asked: Sequence[str] | None,
    full: bool,
    at: datetime,
    export_id: str,
    step: Step,
    storage: Storage,
) -> ExportSummary:
    present = {
        str(r[0])
        for r in con.execute(
            "select table_name from duckdb_tables() where not temporary"
            " union all select view_name from duckdb_views() where not temporary"
        ).fetchall()
    }
    wanted = list(asked) if asked else list(DEFAULT_TABLES)
    specs = [TABLES[t] for t in wanted if t in present]
    missing = tuple(t for t in wanted if t not in present)
    with settings(con, memory_limit=export_memory_limit()):
        if destination.kind == "parquet":
            files = parquet_files(destination, storage)
            done = _to_parquet(con, destination, files, specs, full, at, export_id, step)
        elif destination.kind == "delta":
            lake = lake_of(destination, storage)
            done = _to_delta(con, destination, lake, specs, full, at, export_id, step)
        else:
            done = _to_postgres(con, destination, specs, full, at, export_id, step)
    return ExportSummary(
        export_id, destination.redacted, destination.kind, full, tuple(done), missing
    )


def estimate(
    db: Path | str, dest: str, tables: Sequence[str] | None = None, *, full: bool = False
) -> ExportSummary:
    """What `export` would send to `dest`, sending and writing nothing: each table's rows above
    the watermark the warehouse mirrors for that destination (everything with `full`, or never
    exported there), read on a read-only connection. A table the destination lost since is sent
    whole by the export itself, so this is the least it sends."""
    destination = parse_destination(dest, None)
    unknown = [t for t in tables or () if t not in TABLES]
    if unknown:
        raise OptionsError(
            f"cannot export {', '.join(unknown)}: placeflow exports {', '.join(TABLES)}"
        )
    with reading(db) as con:
        present = {str(r[0]) for r in con.execute(
            "select table_name from duckdb_tables() union all select view_name from duckdb_views()"
        ).fetchall()}  # fmt: skip
        wanted = list(tables) if tables else list(DEFAULT_TABLES)
        recorded = {} if full else _watermarks(con, destination.redacted)
        plans = [plan_table(con, TABLES[t], recorded.get(t)) for t in wanted if t in present]
    done = tuple(TableExport(p.name, p.rows, p.lower, p.upper, ()) for p in plans)
    missing = tuple(t for t in wanted if t not in present)
    return ExportSummary("(estimate)", destination.redacted, destination.kind, full, done, missing)


def _watermarks(con: duckdb.DuckDBPyConnection, destination: str) -> dict[str, datetime]:
    rows = con.execute(
        "select table_name, watermark from export_state where destination = ?"
        " and watermark is not null",
        [destination],
    ).fetchall()
    return {str(name): value for name, value in rows}


def column_names(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    """The warehouse table's columns: a destination lacking one (an export from before the
    warehouse gained it) is sent the table whole, so that no row keeps it empty."""
    return {str(r[0]) for r in con.execute(f"describe {quote(table)}").fetchall()}


def plan_table(
    con: duckdb.DuckDBPyConnection, spec: TableSpec, lower: datetime | None
) -> TablePlan:
    """The rows of `spec` above `lower` (all with None): count and highest cursor value."""
    described = con.execute(f"describe {quote(spec.name)}").fetchall()
    columns = tuple(Column(str(r[0]), str(r[1])) for r in described)
    query = sql_text("queries/export_plan").format(
        table=quote(spec.name),
        cursor=spec.cursor,
        lower="true" if lower is None else f"cursor_value > {timestamp_literal(lower)}",
    )
    try:
        ((count, upper),) = con.execute(query).fetchall()
    except duckdb.Error as exc:
        raise ExportError(f"cannot read {spec.name} for export: {exc}") from exc
    rows = int(count)
    return TablePlan(
        spec.name,
        spec.key,
        spec.cursor,
        columns,
        lower,
        upper if upper is not None else lower,
        rows,
    )


def _to_parquet(
    con: duckdb.DuckDBPyConnection,
    destination: Destination,
    files: ParquetFiles,
    specs: list[TableSpec],
    full: bool,
    at: datetime,
    export_id: str,
    step: Step,
) -> list[TableExport]:
    root = destination.url or destination.path
    try:
        return _write_parquet(con, destination, files, specs, full, at, export_id, step)
    except (OSError, duckdb.IOException) as exc:  # DuckDB's COPY on a full disk: IOException
        where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
        raise ExportError(
            f"cannot write the Parquet export under {root}: {why(exc)}{where}. The tables"
            " exported before it are complete; run the export again once it is fixed"
        ) from None


def _write_parquet(
    con: duckdb.DuckDBPyConnection,
    destination: Destination,
    files: ParquetFiles,
    specs: list[TableSpec],
    full: bool,
    at: datetime,
    export_id: str,
    step: Step,
) -> list[TableExport]:
    from placeflow.exporters import parquet

    manifest = files.read_manifest()
    done = []
    for spec in specs:
        # The manifest travels with the files: its watermark is the destination's own record.
        whole = full or parquet.lacks(manifest, spec.name, column_names(con, spec.name))
        lower = None if whole else parquet.table_watermark(manifest, spec.name)
        with transaction(con):  # one snapshot for the count and the rows written
            plan = plan_table(con, spec, lower)
            seq = parquet.next_seq(manifest, spec.name)
            written = files.write_table(con, plan, seq=seq, day=f"{at:%Y-%m-%d}", step=step)
        manifest = files.commit_table(
            manifest, plan, written, full=whole, exported_at=at, step=step
        )
        names = (written.path,) if written else ()
        _record(con, destination.redacted, export_id, whole, at, [(plan, names)])
        done.append(TableExport(spec.name, plan.rows, plan.lower, plan.upper, names))
    return done


def _to_postgres(
    con: duckdb.DuckDBPyConnection,
    destination: Destination,
    specs: list[TableSpec],
    full: bool,
    at: datetime,
    export_id: str,
    step: Step,
) -> list[TableExport]:
    import adbc_driver_manager
    from adbc_driver_postgresql import dbapi  # type: ignore[import-untyped]  # no py.typed

    from placeflow.exporters import postgres

    # the driver may quote the URI it was given: the password as written there too
    shown = destination.password.reveal() if destination.password else ""
    secrets_ = [shown, url_quote(shown, safe="")] if shown else []
    recorded = {} if full else _watermarks(con, destination.redacted)
    plans: list[tuple[TablePlan, tuple[str, ...]]] = []
    tallies: dict[str, Tally] = {}
    try:
        with (
            dbapi.connect(destination.connection_uri()) as pg,
            pg.cursor() as cur,
            transaction(con),
        ):
            for spec in specs:
                # A table dropped at the destination, or lacking a column, is sent whole again.
                present = postgres.table_columns(cur, spec.name)
                current = present is not None and column_names(con, spec.name) <= present
                lower = recorded.get(spec.name) if current else None
                plan = plan_table(con, spec, lower)
                tallies[spec.name] = Tally({})
                postgres.load_table(cur, con, plan, step=step, tally=tallies[spec.name])
                plans.append((plan, ()))
            step("postgres:before-commit")
            pg.commit()
    except adbc_driver_manager.Error as exc:
        message = redact_text(str(exc), secrets_)
        raise ExportError(f"export to {destination.redacted} failed: {message}") from None
    step("postgres:committed")
    _record(con, destination.redacted, export_id, full, at, plans)
    return [
        TableExport(p.name, p.rows, p.lower, p.upper, made_safe=tallies[p.name].values)
        for p, _ in plans
    ]


def _to_delta(
    con: duckdb.DuckDBPyConnection,
    destination: Destination,
    lake: Lake,
    specs: list[TableSpec],
    full: bool,
    at: datetime,
    export_id: str,
    step: Step,
) -> list[TableExport]:
    from deltalake.exceptions import DeltaError

    from placeflow.exporters import delta

    done = []
    for spec in specs:
        try:
            # The table's own commits hold its watermark: the warehouse mirrors it.
            present = delta.table_columns(lake, spec.name)
            whole = full or (present is not None and not column_names(con, spec.name) <= present)
            lower = None if whole else delta.table_watermark(lake, spec.name)
            with transaction(con), rust_panics_kept_off_stderr():  # one snapshot; one line
                plan = plan_table(con, spec, lower)
                delta.load_table(con, lake, plan, export_id=export_id, step=step, full=full)
        except BaseException as exc:  # a Rust panic (pyo3's PanicException) is a BaseException
            if not isinstance(exc, DeltaError | OSError) and not is_panic(exc):
                raise
            raise ExportError(
                f"cannot write the Delta table {lake.uri(spec.name)}: {why(exc)}. The tables"
                " exported before it are complete; run the export again once it is fixed"
            ) from None
        _record(con, destination.redacted, export_id, whole, at, [(plan, ())])
        done.append(TableExport(spec.name, plan.rows, plan.lower, plan.upper))
    return done


def _record(
    con: duckdb.DuckDBPyConnection,
    destination: str,
    export_id: str,
    full: bool,
    at: datetime,
    done: list[tuple[TablePlan, tuple[str, ...]]],
) -> None:
    """Advance the warehouse's watermarks (after the destination committed)."""
    import json

    with transaction(con):
        for plan, files in done:
            if plan.upper is not None:
                con.execute(
                    sql_text("queries/export_advance"),
                    {
                        "destination": destination,
                        "table_name": plan.name,
                        "watermark": plan.upper,
                        "exports": 1 if plan.rows else 0,
                        "rows": plan.rows,
                        "export_id": export_id,
                        "exported_at": at,
                    },
                )
            con.execute(
                "insert or replace into export_log values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    export_id,
                    destination,
                    plan.name,
                    full,
                    plan.lower,
                    plan.upper,
                    plan.rows,
                    json.dumps(list(files)) if files else None,
                    at,
                ],
            )
