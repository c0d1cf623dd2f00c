"""Frames to and from DuckDB through the Arrow C stream interface, without pyarrow.

DuckDB's `relation.pl()` and polars' `frame.to_arrow()` both build a pyarrow table on the way,
and importing pyarrow costs a process about 70 ms of CPU (as much as a small run's whole
pipeline): a run that exports nothing to Parquet never needs it. Both libraries speak the
Arrow PyCapsule interface (`__arrow_c_stream__`) themselves, so a frame crosses to DuckDB and
back as Arrow data all the same, with no pyarrow in between.

    con.register("pf_view", scannable(frame))   # DuckDB reads the frame, as often as scanned
    frame = fetched(con.sql("select ...", params=...))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import duckdb
    from polars._typing import PolarsDataType


class Scannable:
    """Arrow data as a C stream from `streams`, called for each read: a frame DuckDB can scan
    any number of times (each scan takes a new stream of it), or a stream already taken, read
    once (a bare stream capsule can be read once)."""

    __slots__ = ("streams",)

    def __init__(self, streams: Callable[[object | None], object]) -> None:
        self.streams = streams

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.streams(requested_schema)


def scannable(frame: pl.DataFrame) -> object:
    """`frame` as DuckDB's `register` takes it, without pyarrow; a frame with a column of
    polars' Null type (or a list or struct of it) goes through pyarrow as before: DuckDB refuses
    that column from a stream, which carries its nulls without a validity bitmap, and reads it
    as DuckDB's NULL type from a pyarrow table."""
    if any(_holds_null_type(dtype) for dtype in frame.schema.values()):
        return frame.to_arrow(compat_level=pl.CompatLevel.newest())
    return Scannable(frame.__arrow_c_stream__)


def _holds_null_type(dtype: PolarsDataType) -> bool:
    """Whether `dtype` is polars' Null type or holds it (a list's items, a struct's field)."""
    if dtype == pl.Null:
        return True
    if isinstance(dtype, pl.List | pl.Array):
        return _holds_null_type(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(_holds_null_type(field.dtype) for field in dtype.fields)
    return False


def fetched(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """A relation's rows as a polars frame (what `relation.pl()` gives), without pyarrow. The
    stream is taken from the relation first: handed the relation itself, polars kept it (and so
    its connection) alive to the interpreter's teardown, where DuckDB's bindings report leaks."""
    stream = relation.__arrow_c_stream__()
    return pl.DataFrame(Scannable(lambda _schema: stream))
