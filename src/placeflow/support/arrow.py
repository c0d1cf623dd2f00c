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

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import duckdb


class Scannable:
    """A polars frame DuckDB can scan any number of times: each scan takes a new stream of
    the same frame (a bare stream capsule can be read once)."""

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def scannable(frame: pl.DataFrame) -> object:
    """`frame` as DuckDB's `register` takes it, without pyarrow; a frame with a column of
    polars' Null type goes through pyarrow as before (DuckDB refuses that column from a stream,
    which carries its nulls without a validity bitmap, and reads it as DuckDB's NULL type from
    a pyarrow table)."""
    if any(dtype == pl.Null for dtype in frame.schema.values()):
        return frame.to_arrow(compat_level=pl.CompatLevel.newest())
    return Scannable(frame)


def fetched(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """A relation's rows as a polars frame (what `relation.pl()` gives), without pyarrow."""
    return pl.DataFrame(relation)
