"""Where a run's rows come from (`Source`): files (`FileSource`) or the warehouse's own places
(`placeflow.runner.refresh.WarehouseSource`); the read stage asks a source for its rows, whole
(`read`) or in batches (`stream`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import polars as pl

from placeflow.fields import BATCH_ROWS
from placeflow.options import RunOptions
from placeflow.pipeline.read import expand_inputs, read_inputs, stream_inputs
from placeflow.pipeline.readstream import ReadInfo, ReadStream

__all__ = ["FileSource", "Source", "read", "stream"]


@runtime_checkable
class Source(Protocol):
    """Where a run's rows come from: files today, the warehouse's stale places tomorrow.

    `batches` streams the read frames (columns: OUTPUT_SCHEMA) that normalize takes, at most
    `batch_rows` rows each, its `info` the summary once exhausted; `rows` returns them in one
    frame, with the summary (small sources, research); `inputs` names the source in the run's
    record; `identity` says what makes two runs of it the same command (an unfinished run with
    the same identity and options is resumed); `keys_given` is true when each row's source_id
    is the place_key the warehouse already knows the place by (the warehouse's own places): the
    row keeps that key, never keyed anew from its fields (a key made unique by a phone or an id
    the stored request does not carry would come out another).
    """

    @property
    def inputs(self) -> tuple[str, ...]: ...

    @property
    def keys_given(self) -> bool: ...

    def identity(self) -> list[str]: ...

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]: ...

    def batches(self, options: RunOptions, batch_rows: int) -> ReadStream: ...


@dataclass(frozen=True)
class FileSource:
    """CSV and Parquet files, or globs of them, read in the order given."""

    inputs: tuple[str, ...]

    @property
    def keys_given(self) -> bool:
        """A file's places are keyed from their fields."""
        return False

    def identity(self) -> list[str]:
        """Each file's resolved path, size and modification time."""
        parts = []
        for path in expand_inputs(self.inputs):
            stat = path.stat()
            parts.append(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}")
        return parts

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
        return read_inputs(
            self.inputs,
            mapping=dict(options.mapping) or None,
            encoding=options.encoding,
            separator=options.separator,
            constants=dict(options.constants),
        )

    def batches(self, options: RunOptions, batch_rows: int) -> ReadStream:
        return stream_inputs(
            self.inputs,
            mapping=dict(options.mapping) or None,
            encoding=options.encoding,
            separator=options.separator,
            batch_rows=batch_rows,
            constants=dict(options.constants),
            address_optional=options.without_address,
        )


def read(source: Source, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
    """Read stage: the source's rows, verbatim, each with its file, record number and id."""
    return source.rows(options)


def stream(source: Source, options: RunOptions, batch_rows: int = BATCH_ROWS) -> ReadStream:
    """Read stage in batches: the source's rows, verbatim, at most `batch_rows` at a time."""
    return source.batches(options, batch_rows)
