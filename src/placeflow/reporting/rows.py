"""The user's own rows back with their outcomes (`placeflow rows`), and read-only SQL on the
warehouse (`placeflow query`).

`row_outcomes` reads the run_row_outcomes view for one run (every input row: its disposition,
reject reason, normalised fields and its place's latest outcome) and, for each input file that
is still where the run read it, puts the file's own columns in front, matched by row number.
The original columns are read as the file is now, as text; a name the output already uses gets
" (input)" added.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from placeflow.errors import PlaceflowError, UsageError
from placeflow.options import RunOptions
from placeflow.pipeline.csvfile import ROW, codec_name, read_csv_table, separator_for
from placeflow.pipeline.read import PARQUET_MAGIC
from placeflow.store.warehouse import READ_WAIT, connect, reading
from placeflow.support.arrow import fetched
from placeflow.support.csvsafe import csv_safe

ROWS_SQL = (
    "select * from run_row_outcomes where run_id = ?"
    " and (len(?) = 0 or list_contains(?, disposition)) order by row_ord"
)
"""A run's rows with their outcomes, those of the dispositions listed (all for none)."""
SUFFIXES = (".csv", ".parquet")


def _original(path: Path, options: RunOptions) -> pl.DataFrame | None:
    """The file's columns as text with `source_row`, or None when it cannot be read now."""
    try:
        with path.open("rb") as handle:
            parquet = handle.read(4) == PARQUET_MAGIC
        if parquet:
            frame = pl.read_parquet(path)
            return frame.select(
                pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("source_row"),
                *[pl.col(c).cast(pl.String) for c in frame.columns],
            )
        codec = codec_name(options.encoding)
        table = read_csv_table(path, codec, separator_for(path, options.separator, codec))
    except (OSError, pl.exceptions.PolarsError, ValueError, PlaceflowError):
        return None  # not readable now: the file's own columns are left out
    names = list(dict.fromkeys(h or f"column {i + 1}" for i, h in enumerate(table.header)))
    if len(names) != len(table.header):
        return None  # duplicate header names: which one is meant is unclear
    body = table.body.select(pl.col(ROW).alias("source_row"), *table.body.columns[: len(names)])
    return body.rename(dict(zip(body.columns[1:], names, strict=True)))


def row_outcomes(
    db: Path | str, run_id: str, *, original: bool = True, only: Sequence[str] | None = None
) -> pl.DataFrame:
    """Every input row of the run with its outcome (`only` those of these dispositions); the
    input's own columns first if it can still be read (`original`)."""
    if not Path(db).exists():
        raise UsageError(f"no warehouse at {db}: a run creates it")
    with reading(db) as con:
        stored = con.execute("select options from runs where run_id = ?", [run_id]).fetchall()
        if not stored:
            raise UsageError(f"no run {run_id!r} in {db}; `placeflow runs` lists them")
        wanted = list(only or ())
        rows: pl.DataFrame = fetched(con.sql(ROWS_SQL, params=[run_id, wanted, wanted]))
    if not original or rows.height == 0:
        return rows
    options = stored_read_options(stored[0][0])
    parts = []
    for (name,), part in rows.group_by(["source_file"], maintain_order=True):  # per file
        found = _original(Path(str(name)), options)
        if found is None:
            parts.append(part)
            continue
        taken = set(rows.columns)
        found = found.rename(
            {c: f"{c} (input)" for c in found.columns[1:] if c in taken}
        ).with_columns(pl.col("source_row").cast(pl.Int64))
        joined = part.join(found, on="source_row", how="left", maintain_order="left")
        parts.append(joined.select(*found.columns[1:], *part.columns))
    return pl.concat(parts, how="diagonal_relaxed").sort("row_ord")


def stored_read_options(stored: str | None) -> RunOptions:
    """How the run read its inputs, from runs.options: a run's own options, or what a research
    run keeps of them (its `read_as`: column mapping, encoding, separator)."""
    if not stored:
        return RunOptions()
    values = json.loads(stored)
    if isinstance(values, dict) and values.get("mode") == "research":
        return RunOptions.parse(values.get("read_as") or {})
    return RunOptions.parse(stored)


def write_rows(frame: pl.DataFrame, out: Path) -> None:
    """Write CSV (formulas made inert: `csv_safe`) or Parquet, by the file's suffix."""
    suffix = out.suffix.lower()
    if suffix == ".parquet":
        frame.write_parquet(out)
    elif suffix == ".csv":
        csv_safe(frame).write_csv(out)
    else:
        raise UsageError(f"--out {out}: name a .csv or .parquet file")


LOCKED = "the configuration has been locked"
"""What DuckDB says of a statement that would change a setting of a sealed connection."""


UNREADABLE = re.compile(
    r"\b(?:INTERVAL|UNION|BIT|BIGNUM|VARINT|TIMETZ|TIME WITH TIME ZONE|TIME_NS)\b"
)
"""DuckDB types polars cannot take from Arrow (an INTERVAL, `now() - finished_at`, fails the
whole result with a Rust panic printed on stderr): such a column travels as text."""


def _frame(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """The query's result, each column of a type polars cannot take (UNREADABLE, nested too)
    cast to text first."""
    types = [str(t) for t in relation.dtypes]
    if not any(UNREADABLE.search(t) for t in types):
        whole: pl.DataFrame = fetched(relation)
        return whole
    shown = []
    for name, kind in zip(relation.columns, types, strict=True):
        quoted = '"' + name.replace('"', '""') + '"'
        as_text = UNREADABLE.search(kind) is not None
        shown.append(f"cast({quoted} as varchar) as {quoted}" if as_text else quoted)
    as_read: pl.DataFrame = fetched(relation.project(", ".join(shown)))
    return as_read


def query(db: Path | str, sql: str) -> pl.DataFrame:
    """Run SQL on the warehouse, read-only: a write is refused by DuckDB, and so is any file
    but the warehouse (read_csv, COPY ... TO, ATTACH, INSTALL: its external access is off)."""
    if not Path(db).exists():
        raise UsageError(f"no warehouse at {db}: a run creates it")
    try:
        con = connect(db, read_only=True, wait=READ_WAIT, sealed=True)
    except duckdb.ConnectionException:  # this process has it open otherwise: not shared
        raise UsageError(
            f"{db} is open in this process already; query it from another process"
        ) from None
    try:
        relation = con.sql(sql)
        frame: pl.DataFrame = pl.DataFrame() if relation is None else _frame(relation)
    except duckdb.PermissionException as err:
        first = str(err).splitlines()[0]
        raise UsageError(
            f"the query was refused: {first}. `placeflow query` reads the warehouse only: no"
            " other file is read or written (read_csv, COPY, ATTACH, EXPORT are off)"
        ) from None
    except duckdb.Error as err:
        first = str(err).splitlines()[0]
        if LOCKED in first:  # a setting, or a call that changes one (enable_logging, ...)
            raise UsageError(
                f"the query was refused: {first}. `placeflow query` reads the warehouse only:"
                " no setting is changed and nothing that touches files or the process is called"
                " (SET, PRAGMA, enable_logging, ... are off)"
            ) from None
        raise UsageError(f"the query failed: {first}") from None
    finally:
        con.close()
    return frame
