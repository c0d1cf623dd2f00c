"""Read one Parquet file's place columns as text, in batches (row group by row group, so a
large file is never held whole): values are cast to their text form by polars."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import polars as pl

from placeflow.errors import SourceProblem
from placeflow.pipeline.columns import resolve_columns
from placeflow.pipeline.csvfile import ROW


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def _text(field: str, column: str, dtype: pl.DataType, *, mapped: bool) -> pl.Expr:
    """The column as text for `field`; a nested one (list, struct) refused, naming the field it
    was taken for (by --map, or by its name) and the ways out."""
    if isinstance(dtype, pl.List | pl.Array | pl.Struct | pl.Object):
        how = "by --map" if mapped else "by its name"
        raise SourceProblem(
            f"column {column!r} holds {dtype} values, but place fields need text or numbers;"
            f" it was taken {how} as the field {field}: flatten it, --map {field}=COLUMN to take"
            f" another column, or --map {field}= to leave {field} out"
        )
    return pl.col(column).cast(pl.String)


class ParquetBatches:
    """A Parquet file's chosen columns as text: ROW (the row number from 1), one column per
    field, `read_error` (null). The schema is read and the columns chosen when made."""

    def __init__(
        self,
        path: Path,
        mapping: Mapping[str, str],
        batch_rows: int,
        fixed: frozenset[str] = frozenset(),
    ) -> None:
        try:
            schema = pl.read_parquet_schema(path)
        except (pl.exceptions.PolarsError, OSError) as err:
            raise SourceProblem(
                f"it cannot be read as Parquet ({_first_line(err)}); write it again"
            ) from None
        self.path = path
        self.batch_rows = batch_rows
        self.header = list(schema)
        found = resolve_columns(self.header, mapping, fixed=fixed)
        self.chosen = {f: self.header[i] for f, i in found.items()}
        self._exprs = [
            _text(f, c, schema[c], mapped=bool(mapping.get(f))).alias(f)
            for f, c in self.chosen.items()
        ]

    def __iter__(self) -> Iterator[pl.DataFrame]:
        import pyarrow as pa  # type: ignore[import-untyped]  # no stubs; loaded for Parquet alone
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # the same

        columns = sorted(set(self.chosen.values()))
        done = 0
        try:
            with pq.ParquetFile(self.path) as handle:
                for batch in handle.iter_batches(batch_size=self.batch_rows, columns=columns):
                    frame = pl.DataFrame(pl.from_arrow(batch))
                    first = pl.int_range(1, pl.len() + 1, dtype=pl.Int64) + done
                    out = frame.select(first.alias(ROW), *self._exprs)
                    done += out.height
                    yield out.with_columns(pl.lit(None, pl.String).alias("read_error"))
        except (pl.exceptions.PolarsError, pa.ArrowException, OSError) as err:
            raise SourceProblem(
                f"its place columns cannot be read as text ({_first_line(err)})"
            ) from None
