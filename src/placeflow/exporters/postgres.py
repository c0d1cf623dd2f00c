"""PostgreSQL destination over ADBC: Arrow batches from DuckDB, COPY-loaded into a temporary
staging table, then merged into the target by its key, every table in one transaction.

ADBC's PostgreSQL driver writes Arrow record batches with `COPY ... FROM STDIN (FORMAT binary)`:
no per-row Python, no CSV round trip, typed columns (timestamptz, double precision, boolean,
date) as they are. The target tables are created on first use with PostgreSQL types derived
from DuckDB's (JSON becomes jsonb) and a primary key on the table's key columns; a column the
warehouse gained since is added. `INSERT ... ON CONFLICT (key) DO UPDATE` makes a replayed
export harmless. Text PostgreSQL would refuse (a NUL character, JSON's ``\u0000``) is made safe
on the way (`exporters.textsafe`), so one bad value never fails the load.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb

from placeflow.exporters import ARROW_NATIVE, Column, Step, TablePlan, quote
from placeflow.exporters.textsafe import Tally, safe_batches

BATCH_ROWS = 100_000

_TYPES = {
    "VARCHAR": "text",
    "BOOLEAN": "boolean",
    "DOUBLE": "double precision",
    "FLOAT": "real",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "SMALLINT": "smallint",
    "TINYINT": "smallint",
    "UTINYINT": "smallint",
    "USMALLINT": "integer",
    "UINTEGER": "bigint",
    "UBIGINT": "numeric(20)",
    "HUGEINT": "numeric(39)",
    "DATE": "date",
    "TIME": "time",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "JSON": "jsonb",
    "UUID": "uuid",
}
_DECIMAL = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")


def pg_type(duck_type: str) -> str:
    """The PostgreSQL type a DuckDB column is exported as (text when nothing closer fits)."""
    found = _DECIMAL.match(duck_type.replace(" ", ""))
    if found:
        return f"numeric({found[1]},{found[2]})"
    return _TYPES.get(duck_type, "text")


def _ensure_table(cur: Any, plan: TablePlan) -> None:
    cols = [f"{quote(c.name)} {pg_type(c.duck_type)}" for c in plan.columns]
    key = ", ".join(quote(k) for k in plan.key)
    cur.execute(
        f"create table if not exists {quote(plan.name)} ({', '.join(cols)}, primary key ({key}))"
    )
    for c in plan.columns:
        cur.execute(
            f"alter table {quote(plan.name)} add column if not exists"
            f" {quote(c.name)} {pg_type(c.duck_type)}"
        )


def table_columns(cur: Any, name: str) -> set[str] | None:
    """The columns of the destination's table (None: no such table)."""
    cur.execute(f"select to_regclass('public.{quote(name)}') is not null")
    row = cur.fetchone()
    if not (row and row[0]):
        return None
    regclass = f"to_regclass('public.{quote(name)}')"  # a checked identifier
    cur.execute(
        f"select attname from pg_attribute where attrelid = {regclass}"  # noqa: S608 - checked identifier
        " and attnum > 0 and not attisdropped"
    )
    return {str(r[0]) for r in cur.fetchall()}


def _merge_sql(plan: TablePlan, stage: str) -> str:
    names = ", ".join(quote(c.name) for c in plan.columns)
    values = ", ".join(_cast(c) for c in plan.columns)
    key = ", ".join(quote(k) for k in plan.key)
    others = [c for c in plan.columns if c.name not in plan.key]
    action = (
        "do update set " + ", ".join(f"{quote(c.name)} = excluded.{quote(c.name)}" for c in others)
        if others
        else "do nothing"
    )
    return (
        f"insert into {quote(plan.name)} ({names})"  # noqa: S608 - checked identifiers
        f" select {values} from pg_temp.{quote(stage)} on conflict ({key}) {action}"
    )


def _cast(column: Column) -> str:
    return f"cast({quote(column.name)} as {pg_type(column.duck_type)})"


def load_table(
    cur: Any,
    con: duckdb.DuckDBPyConnection,
    plan: TablePlan,
    *,
    step: Step,
    tally: Tally | None = None,
) -> int:
    """Create or widen the target, COPY the plan's rows into a staging table and merge them;
    returns the rows sent (the values made safe counted in `tally`). The caller commits (or a
    crash rolls everything back)."""
    _ensure_table(cur, plan)
    if plan.rows == 0:
        return 0
    stage = f"_placeflow_stage_{plan.name}"
    cur.execute(f"drop table if exists pg_temp.{quote(stage)}")
    reader = con.sql(plan.select(native=ARROW_NATIVE)).to_arrow_reader(BATCH_ROWS)
    json_columns = frozenset(c.name for c in plan.columns if pg_type(c.duck_type) == "jsonb")
    reader = safe_batches(reader, json_columns, tally if tally is not None else Tally({}))
    sent = int(cur.adbc_ingest(stage, reader, mode="create", temporary=True))
    step(f"postgres:staged:{plan.name}")
    cur.execute(_merge_sql(plan, stage))
    cur.execute(f"drop table pg_temp.{quote(stage)}")
    step(f"postgres:merged:{plan.name}")
    return sent
