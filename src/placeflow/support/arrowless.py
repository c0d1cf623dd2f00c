"""Frames between polars and DuckDB through the Arrow C stream interface (the PyCapsule
protocol) instead of pyarrow tables: neither side loads pyarrow for it (~20 ms of a small
run's CPU), and the columns come across as they did (the same Arrow layout, string views
included: checked for every polars type a frame of ours holds, and DuckDB's results' types).
One exception: a column of polars' Null type (all null, no type given), alone or inside a
list or struct, is refused by DuckDB through the stream ("a non-zero null count but no
validity bitmap"), so such a frame goes as a pyarrow table, as every frame did before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import polars as pl


class FrameStream:
    """A polars frame as an Arrow C stream: `duckdb.register` takes it as a view, scanned
    afresh each time a query reads it."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def registrable(frame: pl.DataFrame) -> Any:
    """What `duckdb.register` is given for `frame`: its Arrow C stream, or a pyarrow table
    (string views kept) when a column is, or holds, the Null type."""
    import polars as pl

    if any("Null" in str(dtype) for dtype in frame.dtypes):
        return frame.to_arrow(compat_level=pl.CompatLevel.newest())
    return FrameStream(frame)


def frame_of(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """A DuckDB result as a polars frame, read as an Arrow C stream (`relation.pl()` makes a
    pyarrow table of it first; the frame is the same, types and values)."""
    import polars as pl

    return pl.DataFrame(relation)
