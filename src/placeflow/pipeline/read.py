"""Read stage: CSV or Parquet files (globs too) into raw place text, a row a record, streamed in
batches (`stream_inputs`, a `ReadStream`) or as one frame (`read_inputs`, the same batches joined).

Which column holds which place field is recognised from its name or given explicitly (see
`placeflow.pipeline.columns`); CSV details (encodings, ragged rows, which files are read whole)
are in `csvfile`, Parquet's in `parquetfile`. Every row keeps its file, its record number and
the user's own id. Values stay verbatim: CSV text as
written, Parquet values cast to their text form; normalisation is the next stage's job.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import polars as pl

from placeflow.errors import InputError, SourceProblem
from placeflow.fields import BATCH_ROWS, MATCH_ONLY_FIELDS, PLACE_FIELDS, split_key
from placeflow.pipeline.columns import (
    canonical,
    check_mapping,
    resolve_columns,
    unmapped_address,
)
from placeflow.pipeline.csvfile import (
    BAD_BYTES_REASON,
    ROW,
    CsvBatches,
    codec_name,
    separator_for,
    sniff,
)
from placeflow.pipeline.parquetfile import ParquetBatches
from placeflow.pipeline.readstream import OUTPUT_SCHEMA, ReadInfo, ReadStream

__all__ = [
    "OUTPUT_SCHEMA",
    "PLACE_FIELDS",
    "InputError",
    "ReadInfo",
    "ReadStream",
    "expand_inputs",
    "ragged_reason",
    "read_inputs",
    "stream_inputs",
]

PARQUET_MAGIC = b"PAR1"
PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})
SEPARATOR_NAMES = {",": "a comma", ";": "a semicolon", "\t": "a tab", "|": "a vertical bar"}


def ragged_reason(separator: str = ",") -> str:
    """The reject reason of a row with more values than the header, in the file's own
    separator: a semicolon file's reason speaks of semicolons, not commas."""
    named = SEPARATOR_NAMES.get(separator, f"the separator {separator!r}")
    return (
        f"row has more values than the header has columns; a value containing {named} may be"
        " missing its quotes"
    )


RAGGED_REASON = ragged_reason(",")
"""The reason of a comma-separated file's ragged row (`ragged_reason` for the others)."""


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


class _File:
    """One input file opened for reading: its header, the columns chosen for the fields, and
    its rows in frames (ROW, the fields found, read_error)."""

    def __init__(
        self,
        path: Path,
        mapping: Mapping[str, str],
        codec: str,
        batch_rows: int,
        separator: str | None = None,
        fixed: frozenset[str] = frozenset(),
    ):
        self.name = str(path)
        self.constants: dict[str, str] = {}
        """Its `--set` values (`mapping_for` of the constants)."""
        try:
            with path.open("rb") as handle:
                head = handle.read(4096)
        except OSError as err:
            raise SourceProblem(
                f"it cannot be opened ({err.strerror}); check its permissions"
            ) from None
        self.csv: CsvBatches | None = None
        if head.startswith(PARQUET_MAGIC):
            parquet = ParquetBatches(path, mapping, batch_rows, fixed)
            self.header, self.chosen = parquet.header, parquet.chosen
            self.batches: Iterable[pl.DataFrame] = parquet
            return
        if path.suffix.lower() in PARQUET_SUFFIXES:
            raise SourceProblem("it is named as Parquet but is not a Parquet file; write it again")
        sniff(head, codec)
        self.csv = CsvBatches(path, codec, batch_rows, separator_for(path, separator, codec))
        self.header = self.csv.header
        found = resolve_columns(self.header, mapping, fixed=fixed) if self.header else {}
        self.chosen = {f: self.header[i] for f, i in found.items()}
        self.batches = self._csv_rows(self.csv, found)

    @staticmethod
    def _csv_rows(csv: CsvBatches, found: dict[str, int]) -> Iterator[pl.DataFrame]:
        error = (
            pl.when(pl.col("extra_fields")).then(pl.lit(ragged_reason(csv.separator)))
            .when(pl.col("bad_bytes")).then(pl.lit(BAD_BYTES_REASON))
            .otherwise(None)
        )  # fmt: skip
        for body in csv:
            names = body.columns
            exprs = [pl.col(names[i]).alias(f) for f, i in found.items()]
            yield body.select(ROW, *exprs, error.alias("read_error"))

    @property
    def blank_rows(self) -> int:
        return self.csv.blank_rows if self.csv is not None else 0


def _shape(
    frame: pl.DataFrame, source_file: str, constants: Mapping[str, str] | None = None
) -> pl.DataFrame:
    present, constants = set(frame.columns), constants or {}

    def value(f: str) -> pl.Expr:
        if f in constants:  # --set: one value for every row
            return pl.lit(constants[f], pl.String)
        return pl.col(f) if f in present else pl.lit(None, pl.String)

    return frame.select(
        pl.lit(source_file, pl.String).alias("source_file"),
        pl.col(ROW).cast(pl.Int64).alias("source_row"),
        (pl.col("id") if "id" in present else pl.lit(None, pl.String)).alias("source_id"),
        *[value(f).alias(f) for f in (*PLACE_FIELDS, *MATCH_ONLY_FIELDS)],
        pl.col("read_error").cast(pl.String),
    )


class _Tally:
    """What the read has seen so far, file by file, for its ReadInfo."""

    def __init__(self, constants: Mapping[str, str] | None = None) -> None:
        self.constants = dict(constants or {})
        self.columns: dict[str, dict[str, str]] = {}
        self.ignored: dict[str, tuple[str, ...]] = {}
        self.warnings: list[str] = []
        self.counts: dict[str, int] = {}
        self.blank = 0
        self.errors = 0
        self.bad_bytes = 0

    def opened(self, file: _File) -> None:
        name = file.name
        self.columns[name] = file.chosen
        used = set(file.chosen.values())
        self.ignored[name] = tuple(c for c in dict.fromkeys(file.header) if c not in used)
        for dup in duplicate_headers(file.header):
            self.warnings.append(
                f"{name}: the header names {dup!r} more than once; only the first such column "
                "is used (rename the others, or --map the field to the column you mean)"
            )
        self.counts[name] = 0

    def rows(self, name: str, frame: pl.DataFrame) -> None:
        self.counts[name] += frame.height
        errors = frame.select(
            pl.col("read_error").is_not_null().sum().alias("all"),
            (pl.col("read_error") == BAD_BYTES_REASON).sum().alias("bytes"),
        )
        self.errors += int(errors.item(0, "all"))
        self.bad_bytes += int(errors.item(0, "bytes"))

    def info(self) -> ReadInfo:
        warnings = list(self.warnings)
        if self.bad_bytes:
            warnings.append(
                f"{self.bad_bytes:,} row(s) have bytes that are not valid UTF-8 and are rejected "
                "(see rejects)"
            )
        return ReadInfo(
            files=tuple(self.columns),
            rows=sum(self.counts.values()),
            columns=self.columns,
            rows_per_file=self.counts,
            empty_files=tuple(n for n, c in self.counts.items() if c == 0),
            blank_rows=self.blank,
            ragged_rows=self.errors - self.bad_bytes,
            ignored=self.ignored,
            warnings=tuple(warnings),
            bad_byte_rows=self.bad_bytes,
            constants=self.constants,
        )


def mapping_for(path: Path, given: Mapping[str, str], label: str | None = None) -> dict[str, str]:
    """The mapping (or the `--set` values) of one file: plain `field` keys, then `FILE:field`
    keys naming this file (as given, by its resolved path, its bare name or its label, an
    object's URL), which win."""
    plain = {k: v for k, v in given.items() if split_key(k)[0] is None}
    for key, column in given.items():
        prefix, name = split_key(key)
        if prefix is not None and names_file(prefix, path, label):
            plain[name] = column
    return plain


def names_file(prefix: str, path: Path, label: str | None = None) -> bool:
    """Whether a `--map FILE:...` (or `--set FILE:...`) prefix names this file."""
    if prefix in (str(path), path.name, label):
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


def _open(
    path: Path, given: Mapping[str, str], codec: str, batch_rows: int, separator: str | None,
    constants: Mapping[str, str], labels: Mapping[str, str], address_optional: bool = True,
) -> _File:  # fmt: skip
    """The file opened, named by its label (an object's URL, for a copy of it) if it has one,
    with its mapping and its `--set` values."""
    name = labels.get(str(path), str(path))
    mapping, fixed = mapping_for(path, given, name), mapping_for(path, constants, name)
    both = sorted({f for f, column in mapping.items() if column} & set(fixed))
    if both:
        raise InputError(
            f"{name}: --map and --set both give the field {both[0]}: one column or one value,"
            " not both"
        )
    try:
        opened = _File(path, mapping, codec, batch_rows, separator, frozenset(fixed))
    except SourceProblem as problem:
        raise InputError(f"{name}: {problem}") from None
    opened.name, opened.constants = name, fixed
    left = [] if address_optional else unmapped_address(opened.chosen, list(fixed), opened.header)
    if left:
        raise InputError(_no_address(name, opened.chosen, left))
    return opened


def _no_address(name: str, chosen: Mapping[str, str], left: Sequence[tuple[str, str]]) -> str:
    """The refusal of a file mapped without its address (`unmapped_address`)."""
    mapped = ", ".join(sorted(chosen)) or "no field"
    columns = ", ".join(repr(column) for column, _ in left)
    fields: dict[str, str] = {}
    for column, field in left:  # the first column of each field
        fields.setdefault(field, column)
    maps = " ".join(f"--map '{name}:{f}={c}'" for f, c in fields.items())
    return (
        f"{name}: only {mapped} mapped, while the columns {columns} that look like an address"
        " are ignored; places sent without an address are matched by their name alone (weaker"
        f" answers, each charged). Map them, e.g. {maps}, or pass --without-address to send"
        " them as they are; nothing was sent"
    )


def _file_rows(
    first: _File, rest: Sequence[Path], given: Mapping[str, str], codec: str, batch_rows: int,
    separator: str | None, tally: _Tally, labels: Mapping[str, str], address_optional: bool,
) -> Iterator[pl.DataFrame]:  # fmt: skip
    """Each file's rows in order, shaped; later files are opened when reached."""
    opened: _File | None = first
    paths = iter(rest)
    constants = tally.constants
    while opened is not None:  # one iteration per file, not per row
        tally.opened(opened)
        try:
            for frame in opened.batches:
                tally.rows(opened.name, frame)
                yield _shape(frame, opened.name, opened.constants)
        except SourceProblem as problem:
            raise InputError(f"{opened.name}: {problem}") from None
        tally.blank += opened.blank_rows
        following = next(paths, None)
        opened = (
            None
            if following is None
            else _open(
                following, given, codec, batch_rows, separator, constants, labels, address_optional
            )
        )


def stream_inputs(
    patterns: Sequence[str],
    *,
    mapping: Mapping[str, str] | None = None,
    encoding: str = "utf8",
    separator: str | None = None,
    batch_rows: int = BATCH_ROWS,
    constants: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    address_optional: bool = True,
) -> ReadStream:
    """Read every file the patterns name, in file order, as a stream of read frames of at most
    `batch_rows` rows (see `ReadStream`). CSV values are split at `separator` (by default a
    comma, or tab for .tsv and .tab files: `separator_for`).

    A mapping key `field` applies to every file, `FILE:field` to the file it names only;
    `constants` (`--set`) give a field one value in every row, no column read for it, keyed
    alike (`FILE:field`: that file's rows only). The
    inputs, the mapping and the first file's header are checked at once (InputError); a later
    file's header when the stream reaches it, and a file's body as it is read. `labels` name
    files by another name than their path (a local copy of an object by the object's URL).
    Unless `address_optional`, a file whose mapping gives no field of a place's location while
    columns that look like an address feed nothing is refused (InputError) when opened.
    """
    given, constants = dict(mapping or {}), dict(constants or {})
    try:
        check_mapping(given)
        codec = codec_name(encoding)
    except SourceProblem as problem:
        raise InputError(str(problem)) from None
    paths, labels = expand_inputs(patterns), dict(labels or {})
    for flag, pairs in (("--map", given), ("--set", constants)):
        for key, value in pairs.items():
            prefix = split_key(key)[0]
            if prefix is not None and not any(
                names_file(prefix, p, labels.get(str(p))) for p in paths
            ):
                inputs = ", ".join(labels.get(str(p), str(p)) for p in paths)
                raise InputError(
                    f"{flag} {key}={value} names the file {prefix!r}, which is not an input;"
                    f" the inputs are {inputs}"
                )
    tally = _Tally(constants)
    first = _open(paths[0], given, codec, batch_rows, separator, constants, labels,
                  address_optional)  # fmt: skip
    frames = _file_rows(first, paths[1:], given, codec, batch_rows, separator, tally, labels,
                        address_optional)  # fmt: skip
    return ReadStream(frames, tally.info, batch_rows)


def read_inputs(
    patterns: Sequence[str],
    *,
    mapping: Mapping[str, str] | None = None,
    encoding: str = "utf8",
    separator: str | None = None,
    constants: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, ReadInfo]:
    """Read every file the patterns name into one frame (columns: OUTPUT_SCHEMA), in file order:
    the batches of `stream_inputs`, in one frame."""
    stream = stream_inputs(
        patterns,
        mapping=mapping,
        encoding=encoding,
        separator=separator,
        constants=constants,
        labels=labels,
    )
    rows = stream.frame()
    return rows, stream.info


# --- sources --------------------------------------------------------------------------------
