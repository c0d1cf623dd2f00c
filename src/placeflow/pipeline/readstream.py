"""The read stage's output in batches: `ReadStream` yields read frames of at most `batch_rows`
rows each (row_ord numbered across them, from 0), then says what was read as a `ReadInfo`.

Whoever makes a stream gives it the frames (OUTPUT_SCHEMA's columns but row_ord, any sizes;
the MATCH_ONLY_FIELDS may be left out, as a warehouse's places have none) and a function that
sums up the read once they are exhausted; the stream cuts and joins them into batches.
`ReadStream.whole` serves a source whose rows are one small frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import polars as pl

from placeflow.errors import NotYetKnown, OptionsError
from placeflow.fields import BATCH_ROWS, MATCH_ONLY_FIELDS, PLACE_FIELDS

OUTPUT_SCHEMA: dict[str, pl.DataType] = {
    "row_ord": pl.Int64(),
    "source_file": pl.String(),
    "source_row": pl.Int64(),
    "source_id": pl.String(),
    **{f: pl.String() for f in PLACE_FIELDS},
    **{f: pl.String() for f in MATCH_ONLY_FIELDS},
    "read_error": pl.String(),
}
"""The read frame. `read_error` (beyond the nine fields) is null, or why the record cannot be
used at all (a ragged row); normalize turns it into a rejection."""


@dataclass(frozen=True)
class ReadInfo:
    """What was read: files in order, rows in all, and per file which column gave each field."""

    files: tuple[str, ...]
    rows: int
    columns: dict[str, dict[str, str]]
    rows_per_file: dict[str, int] = field(default_factory=dict)
    empty_files: tuple[str, ...] = ()
    """Files with no data rows (empty, or a header only): not an error, but worth saying."""
    blank_rows: int = 0
    """Blank CSV records (every value empty), skipped; `source_row` still counts them."""
    ragged_rows: int = 0
    """Records with more values than the header: kept, with `read_error` set, to be rejected."""
    ignored: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per file, its columns that feed no field (in file order)."""
    warnings: tuple[str, ...] = ()
    """What the user should know about the input (duplicate header names, ...)."""
    bad_byte_rows: int = 0
    """Rows rejected for bytes that are not valid UTF-8 (a few in an otherwise UTF-8 file)."""
    constants: dict[str, str] = field(default_factory=dict)
    """Fields given one value for every row (`--set`), by field."""


class ReadStream:
    """Read frames (OUTPUT_SCHEMA) of at most `batch_rows` rows, in row_ord order; `info` is
    the whole read's ReadInfo once the frames are exhausted (before that it raises)."""

    def __init__(
        self,
        frames: Iterable[pl.DataFrame],
        summary: Callable[[], ReadInfo],
        batch_rows: int = BATCH_ROWS,
    ) -> None:
        if batch_rows < 1:
            raise OptionsError(f"batch_rows must be at least 1, not {batch_rows}")
        self.batch_rows = batch_rows
        self._summary = summary
        self._info: ReadInfo | None = None
        self._batches = self._cut(iter(frames))

    @classmethod
    def whole(cls, frame: pl.DataFrame, info: ReadInfo, batch_rows: int = BATCH_ROWS) -> ReadStream:
        """A stream of one frame already read (its row_ord is numbered again, from 0)."""
        rest = frame.drop("row_ord") if "row_ord" in frame.columns else frame
        return cls([rest], lambda: info, batch_rows)

    def __iter__(self) -> Iterator[pl.DataFrame]:
        return self

    def __next__(self) -> pl.DataFrame:
        return next(self._batches)

    @property
    def info(self) -> ReadInfo:
        if self._info is None:
            raise NotYetKnown("the read's info is known once its batches are exhausted")
        return self._info

    def frame(self) -> pl.DataFrame:
        """The rest of the stream in one frame (small inputs, tests)."""
        out: pl.DataFrame = pl.concat([pl.DataFrame(schema=OUTPUT_SCHEMA), *self], how="vertical")
        return out

    def _cut(self, frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        pending: list[pl.DataFrame] = []
        held = 0
        done = 0
        for frame in frames:  # one iteration per frame given, not per row
            if frame.height == 0:
                continue
            pending.append(frame)
            held += frame.height
            while held >= self.batch_rows:
                joined = pl.concat(pending, how="vertical", rechunk=False)
                rest = joined.slice(self.batch_rows)
                yield self._number(joined.slice(0, self.batch_rows), done)
                done += self.batch_rows
                pending, held = ([rest], rest.height) if rest.height else ([], 0)
        if pending:
            yield self._number(pl.concat(pending, how="vertical", rechunk=False), done)
        self._info = self._summary()

    @staticmethod
    def _number(frame: pl.DataFrame, start: int) -> pl.DataFrame:
        ordinal = pl.int_range(pl.len(), dtype=pl.Int64) + start
        present = set(frame.columns)
        rest = [
            pl.lit(None, pl.String).alias(c)
            if c in MATCH_ONLY_FIELDS and c not in present
            else pl.col(c)
            for c in OUTPUT_SCHEMA
            if c != "row_ord"
        ]
        return frame.select(ordinal.alias("row_ord"), *rest)
