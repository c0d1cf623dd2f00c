"""Read stage: CSV or Parquet files (globs too) into one frame of raw place text, a row a record.

Which column holds which place field is recognised from its name or given explicitly (see
`placeflow.pipeline.columns`); CSV details (encodings, ragged rows) are in `csvfile`. Every row
keeps its file, its record number and the user's own id. Values stay verbatim: CSV text as
written, Parquet values cast to their text form; normalisation is the next stage's job.
"""

from __future__ import annotations

import glob
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

import polars as pl

from placeflow.errors import InputError, SourceProblem
from placeflow.options import RunOptions
from placeflow.pipeline.columns import (
    PLACE_FIELDS,
    canonical,
    check_mapping,
    resolve_columns,
    split_key,
)
from placeflow.pipeline.csvfile import BAD_BYTES_REASON, ROW, codec_name, read_csv_table, sniff

__all__ = [
    "PLACE_FIELDS",
    "FileSource",
    "InputError",
    "ReadInfo",
    "Source",
    "expand_inputs",
    "read",
    "read_inputs",
]

PARQUET_MAGIC = b"PAR1"
PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})
RAGGED_REASON = (
    "row has more values than the header has columns; a value containing a comma may be "
    "missing its quotes"
)
OUTPUT_SCHEMA: dict[str, pl.DataType] = {
    "row_ord": pl.Int64(),
    "source_file": pl.String(),
    "source_row": pl.Int64(),
    "source_id": pl.String(),
    **{f: pl.String() for f in PLACE_FIELDS},
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


def expand_inputs(patterns: Sequence[str]) -> list[Path]:
    """Each pattern's matches sorted, patterns in the order given, each file once."""
    if not patterns:
        raise InputError("no input files given; name one or more CSV or Parquet files or globs")
    found: list[Path] = []
    seen: set[Path] = set()
    for pattern in patterns:
        literal = Path(pattern)
        if literal.is_dir():
            raise InputError(f"{pattern} is a directory; name its files, e.g. {literal / '*.csv'}")
        matches = (
            [literal] if literal.is_file() else
            [Path(p) for p in sorted(glob.glob(pattern, recursive=True)) if Path(p).is_file()]
        )  # fmt: skip
        if not matches:
            raise InputError(f"{pattern}: no such file (nothing matches); check the path")
        for path in matches:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def _text(column: str, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.List | pl.Array | pl.Struct | pl.Object):
        raise SourceProblem(
            f"column {column!r} holds {dtype} values, but place fields need text or numbers; "
            "flatten it, or --map the field to another column"
        )
    return pl.col(column).cast(pl.String)


def _read_parquet(
    path: Path, mapping: Mapping[str, str]
) -> tuple[pl.DataFrame, dict[str, str], list[str]]:
    try:
        schema = pl.read_parquet_schema(path)
    except (pl.exceptions.PolarsError, OSError) as err:
        first = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise SourceProblem(f"it cannot be read as Parquet ({first}); write it again") from None
    header = list(schema)
    chosen = {f: header[i] for f, i in resolve_columns(header, mapping).items()}
    exprs = [_text(c, schema[c]).alias(f) for f, c in chosen.items()]
    try:
        frame = pl.read_parquet(path, columns=sorted(set(chosen.values())))
        out = frame.select(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias(ROW), *exprs)
    except pl.exceptions.PolarsError as err:
        first = str(err).splitlines()[0][:200]
        raise SourceProblem(f"its place columns cannot be read as text ({first})") from None
    return out.with_columns(pl.lit(None, pl.String).alias("read_error")), chosen, header


class _Read(NamedTuple):
    frame: pl.DataFrame
    chosen: dict[str, str]
    blank_rows: int
    header: list[str]


def _read_csv(path: Path, mapping: Mapping[str, str], codec: str) -> _Read:
    table = read_csv_table(path, codec)
    if not table.header:
        empty = pl.DataFrame(schema={ROW: pl.Int64, "read_error": pl.String})
        return _Read(empty, {}, 0, [])
    chosen = resolve_columns(table.header, mapping)
    names = table.body.columns
    exprs = [pl.col(names[i]).alias(f) for f, i in chosen.items()]
    error = (
        pl.when(pl.col("extra_fields")).then(pl.lit(RAGGED_REASON))
        .when(pl.col("bad_bytes")).then(pl.lit(BAD_BYTES_REASON))
        .otherwise(None)
    )  # fmt: skip
    out = table.body.select(ROW, *exprs, error.alias("read_error"))
    return _Read(
        out, {f: table.header[i] for f, i in chosen.items()}, table.blank_rows, table.header
    )


def _read_one(path: Path, mapping: Mapping[str, str], codec: str) -> _Read:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as err:
        raise SourceProblem(
            f"it cannot be opened ({err.strerror}); check its permissions"
        ) from None
    if head.startswith(PARQUET_MAGIC):
        frame, chosen, header = _read_parquet(path, mapping)
        return _Read(frame, chosen, 0, header)
    if path.suffix.lower() in PARQUET_SUFFIXES:
        raise SourceProblem("it is named as Parquet but is not a Parquet file; write it again")
    sniff(head, codec)
    return _read_csv(path, mapping, codec)


def _shape(frame: pl.DataFrame, source_file: str) -> pl.DataFrame:
    present = set(frame.columns)
    return frame.select(
        pl.lit(source_file, pl.String).alias("source_file"),
        pl.col(ROW).cast(pl.Int64).alias("source_row"),
        (pl.col("id") if "id" in present else pl.lit(None, pl.String)).alias("source_id"),
        *[(pl.col(f) if f in present else pl.lit(None, pl.String)).alias(f) for f in PLACE_FIELDS],
        pl.col("read_error").cast(pl.String),
    )


def mapping_for(path: Path, given: Mapping[str, str]) -> dict[str, str]:
    """The mapping of one file: plain `field` keys, then `FILE:field` keys naming this file
    (as given, by its resolved path, or by its bare name), which win."""
    plain = {k: v for k, v in given.items() if split_key(k)[0] is None}
    for key, column in given.items():
        prefix, name = split_key(key)
        if prefix is not None and names_file(prefix, path):
            plain[name] = column
    return plain


def names_file(prefix: str, path: Path) -> bool:
    """Whether a `--map FILE:...` prefix names this file."""
    if prefix in (str(path), path.name):
        return True
    try:
        return Path(prefix).resolve() == path.resolve()
    except OSError:
        return False


def duplicate_headers(header: Sequence[str]) -> list[str]:
    """Header names given more than once (compared as column recognition compares them)."""
    seen: dict[str, list[str]] = {}
    for name in header:
        if name.strip():
            seen.setdefault(canonical(name), []).append(name)
    return [" / ".join(dict.fromkeys(names)) for names in seen.values() if len(names) > 1]


def read_inputs(
    patterns: Sequence[str], *, mapping: Mapping[str, str] | None = None, encoding: str = "utf8"
) -> tuple[pl.DataFrame, ReadInfo]:
    """Read every file the patterns name into one frame (columns: OUTPUT_SCHEMA), in file order.

    A mapping key `field` applies to every file, `FILE:field` to the file it names only.
    """
    given = dict(mapping or {})
    try:
        check_mapping(given)
        codec = codec_name(encoding)
    except SourceProblem as problem:
        raise InputError(str(problem)) from None
    paths = expand_inputs(patterns)
    for key in given:
        prefix = split_key(key)[0]
        if prefix is not None and not any(names_file(prefix, p) for p in paths):
            raise InputError(
                f"--map {key}={given[key]} names the file {prefix!r}, which is not an input; "
                f"the inputs are {', '.join(str(p) for p in paths)}"
            )
    frames: list[pl.DataFrame] = []
    columns: dict[str, dict[str, str]] = {}
    ignored: dict[str, tuple[str, ...]] = {}
    warnings: list[str] = []
    counts: dict[str, int] = {}
    blank = 0
    for path in paths:  # one iteration per file, not per row
        name = str(path)
        try:
            got = _read_one(path, mapping_for(path, given), codec)
        except SourceProblem as problem:
            raise InputError(f"{name}: {problem}") from None
        frames.append(_shape(got.frame, name))
        columns[name] = got.chosen
        used = set(got.chosen.values())
        ignored[name] = tuple(c for c in dict.fromkeys(got.header) if c not in used)
        for dup in duplicate_headers(got.header):
            warnings.append(
                f"{name}: the header names {dup!r} more than once; only the first such column "
                "is used (rename the others, or --map the field to the column you mean)"
            )
        counts[name] = got.frame.height
        blank += got.blank_rows
    rows = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=OUTPUT_SCHEMA)
    rows = rows.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row_ord"), pl.all())
    errors = rows.select(
        pl.col("read_error").is_not_null().sum().alias("all"),
        (pl.col("read_error") == BAD_BYTES_REASON).sum().alias("bytes"),
    )
    bad_bytes = int(errors.item(0, "bytes"))
    if bad_bytes:
        warnings.append(
            f"{bad_bytes:,} row(s) have bytes that are not valid UTF-8 and are rejected "
            "(see rejects)"
        )
    info = ReadInfo(
        files=tuple(columns),
        rows=rows.height,
        columns=columns,
        rows_per_file=counts,
        empty_files=tuple(n for n, c in counts.items() if c == 0),
        blank_rows=blank,
        ragged_rows=int(errors.item(0, "all")) - bad_bytes,
        ignored=ignored,
        warnings=tuple(warnings),
        bad_byte_rows=bad_bytes,
    )
    return rows, info


# --- sources --------------------------------------------------------------------------------


@runtime_checkable
class Source(Protocol):
    """Where a run's rows come from: files today, the warehouse's stale places tomorrow.

    `rows` returns the read frame (columns: OUTPUT_SCHEMA) that normalize takes, and its
    summary; `inputs` names the source in the run's record; `identity` says what makes two runs
    of it the same command (an unfinished run with the same identity and options is resumed).
    """

    @property
    def inputs(self) -> tuple[str, ...]: ...

    def identity(self) -> list[str]: ...

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]: ...


@dataclass(frozen=True)
class FileSource:
    """CSV and Parquet files, or globs of them, read in the order given."""

    inputs: tuple[str, ...]

    def identity(self) -> list[str]:
        """Each file's resolved path, size and modification time."""
        parts = []
        for path in expand_inputs(self.inputs):
            stat = path.stat()
            parts.append(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}")
        return parts

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
        return read_inputs(
            self.inputs, mapping=dict(options.mapping) or None, encoding=options.encoding
        )


def read(source: Source, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
    """Read stage: the source's rows, verbatim, each with its file, record number and id."""
    return source.rows(options)
