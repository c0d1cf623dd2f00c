"""Parse one CSV file into raw text columns: encodings, byte-order marks, quoting, ragged rows.

Every value is read as text (no type inference), so postcodes keep their leading zeros.
The common case is one strict, multi-threaded polars parse straight from the file. Only when it
fails is the file read into memory: to decode another encoding, to report bytes that are not
valid in the encoding (never replaced silently), or to find rows with more fields than the
header. Such rows are flagged (`extra_fields`) for rejection, since their values may be shifted;
extra values that are all empty are tolerated (OVERFLOW of them are looked at). Rows with fewer
fields than the header are kept, the missing values null. Blank records (every value empty) are
dropped and counted; `source_row` is the record number, so it still points at the right record.
A few bytes that are not valid UTF-8 (on at most one line in a hundred) reject
only their rows (`bad_bytes`); more than that means the file has another encoding and it is
refused with a hint.
"""

from __future__ import annotations

import codecs
import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from placeflow.errors import SourceProblem

OVERFLOW = 8
"""Spare columns read past the header's width to see a ragged row's extra values."""
UTF8 = frozenset({"utf-8", "utf-8-sig"})
BOM = b"\xef\xbb\xbf"
ROW = "__row"
NOT_TEXT = {
    b"PK\x03\x04": "a ZIP archive or an Excel .xlsx workbook; save it as CSV first",
    b"\xd0\xcf\x11\xe0": "an Excel .xls workbook; save it as CSV first",
    b"%PDF": "a PDF document, not a table",
    b"\x89PNG": "a PNG image, not a table",
    b"SQLite format 3": "a SQLite database; export the table as CSV first",
}
MARK = "\ufdd0"
"""Stands in for a byte that is not valid UTF-8 (a Unicode noncharacter: never in real text)."""
SHOWN = "\ufffd"
"""What such a byte is shown as in a rejected row's raw values."""
BAD_BYTES_REASON = (
    "the row has bytes that are not valid UTF-8 (shown as \ufffd); fix them in the file, or "
    "pass --encoding if the whole file has another encoding"
)


def _mark_bad(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return MARK, err.end


codecs.register_error("placeflow-mark", _mark_bad)


@dataclass(frozen=True)
class CsvTable:
    """A parsed file: its header's values and its data records as text columns."""

    header: list[str]
    body: pl.DataFrame
    """Columns in header order, then `__row` (record number), `extra_fields` and `bad_bytes`
    (Booleans: more values than the header; bytes that are not valid UTF-8)."""
    blank_rows: int


def codec_name(encoding: str) -> str:
    """The canonical codec name for an --encoding value, or a SourceProblem naming good ones."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise SourceProblem(
            f"unknown encoding {encoding!r}; use a codec name such as utf-8, cp1252, latin-1, "
            "utf-16"
        ) from None


def sniff(head: bytes, codec: str) -> None:
    """Refuse at once a file whose first bytes show it is not delimited text."""
    for magic, what in NOT_TEXT.items():
        if head.startswith(magic):
            raise SourceProblem(f"the file is {what}")
    if codec in UTF8 and not head.startswith(b"\x1f\x8b") and b"\x00" in head:
        utf16 = head[:2] in (b"\xff\xfe", b"\xfe\xff")
        hint = " (UTF-16 text? pass --encoding utf-16)" if utf16 else ""
        raise SourceProblem(f"the file contains NUL bytes: it is binary, not CSV text{hint}")


def _utf8_bytes(path: Path, codec: str) -> bytes:
    raw = path.read_bytes()
    if raw.startswith(b"\x1f\x8b"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise SourceProblem(
                f"the file looks gzip-compressed but cannot be unpacked: {err}"
            ) from None
    if raw.startswith(BOM) and codec not in UTF8:
        raise SourceProblem(
            f"the file starts with a UTF-8 byte-order mark: it is UTF-8, not {codec}"
        )
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError as err:
        lines = raw.count(b"\n") + 1
        if codec in UTF8 and raw[:2] not in (b"\xff\xfe", b"\xfe\xff"):
            text = raw.decode(codec, errors="placeflow-mark")
            bad_lines = sum(1 for line in text.splitlines() if MARK in line)  # few lines
            if bad_lines * 100 <= lines:  # at most 1 line in 100: a few stray bytes
                data = text.encode("utf-8")
                return data[len(BOM) :] if data.startswith(BOM) else data
        line = raw.count(b"\n", 0, err.start) + 1
        bad = raw[err.start : err.start + 1].hex()
        hint = "try --encoding cp1252 (Excel on Windows) or latin-1"
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            hint = "the file starts like UTF-16: pass --encoding utf-16"
        raise SourceProblem(
            f"byte 0x{bad} on line {line} is not valid {codec}; the file has another encoding: "
            f"{hint}"
        ) from None
    data = raw if codec in UTF8 else text.encode("utf-8")
    return data[len(BOM) :] if data.startswith(BOM) else data


def _parse(source: Path | bytes) -> pl.DataFrame:
    """Every record as text, the header record included as the first row (strict widths)."""
    return pl.read_csv(
        source,
        has_header=False,
        infer_schema=False,
        raise_if_empty=False,
        glob=False,
        row_index_name=ROW,
    )


def _explain(err: pl.exceptions.PolarsError) -> str:
    text = str(err)
    field = re.search(r"Field `(.{0,60})", text, re.DOTALL)
    if field:
        near = field.group(1).split("`")[0].replace("\n", "\\n")
        return (
            f"a quoted value is not closed, or has text after its closing quote (near {near!r}); "
            "fix the quoting or export the file again"
        )
    return f"it is not well-formed CSV ({text.splitlines()[0][:200]}); export the file again"


def _parse_ragged(data: bytes) -> pl.DataFrame:
    """Parse with spare columns past the header's width, flagging rows with values in them."""
    try:
        first = pl.read_csv(
            data, has_header=False, n_rows=1, infer_schema=False, truncate_ragged_lines=True,
            raise_if_empty=False,
        )  # fmt: skip
        names = ",".join(f"c{i}" for i in range(first.width + OVERFLOW)).encode()
        frame = pl.read_csv(
            names + b"\n" + data, infer_schema=False, truncate_ragged_lines=True,
            raise_if_empty=False, row_index_name=ROW,
        )  # fmt: skip
    except pl.exceptions.PolarsError as err:
        raise SourceProblem(_explain(err)) from None
    spare = frame.columns[1 + first.width :]
    # Extra empty values ("a,b,c,,") are a common export quirk and lose nothing.
    extra = pl.any_horizontal([pl.col(c).is_not_null() & (pl.col(c) != "") for c in spare])
    return frame.with_columns(extra.fill_null(False).alias("extra_fields")).drop(spare)


def read_csv_table(path: Path, codec: str) -> CsvTable:
    """Parse a CSV file (see the module docstring for how each kind of mess is handled)."""
    frame: pl.DataFrame | None = None
    marks = False
    if codec in UTF8:
        try:
            frame = _parse(path).with_columns(pl.lit(False).alias("extra_fields"))
        except pl.exceptions.PolarsError:
            frame = None  # read it again below, to say exactly what is wrong
    if frame is None:
        data = _utf8_bytes(path, codec)
        marks = MARK.encode() in data
        try:
            frame = _parse(data).with_columns(pl.lit(False).alias("extra_fields"))
        except pl.exceptions.PolarsError:
            frame = _parse_ragged(data)
    columns = frame.columns[1:-1]
    if not columns:
        schema = {ROW: pl.Int64, "extra_fields": pl.Boolean, "bad_bytes": pl.Boolean}
        return CsvTable([], pl.DataFrame(schema=schema), 0)
    if marks:  # only a file with a few bad bytes is scanned for them
        marked = pl.any_horizontal([pl.col(c).str.contains(MARK, literal=True) for c in columns])
        frame = frame.with_columns(marked.fill_null(False).alias("bad_bytes")).with_columns(
            [pl.col(c).str.replace_all(MARK, SHOWN, literal=True) for c in columns]
        )
    else:
        frame = frame.with_columns(pl.lit(False).alias("bad_bytes"))
    blank = pl.all_horizontal([pl.col(c).is_null() for c in columns])
    filled = frame.filter(~blank)
    if filled.height == 0:  # nothing but blank lines: an empty file
        out = filled.select(*columns, pl.col(ROW).cast(pl.Int64), "extra_fields", "bad_bytes")
        return CsvTable([], out, 0)
    header = ["" if v is None else str(v) for v in filled.select(columns).row(0)]
    if any("\x00" in h for h in header):
        raise SourceProblem("the file contains NUL bytes: it is binary, not CSV text")
    header_at = filled.item(0, ROW)
    body = filled.slice(1).select(
        *columns,
        (pl.col(ROW).cast(pl.Int64) - header_at).alias(ROW),
        "extra_fields",
        "bad_bytes",
    )
    return CsvTable(header, body, frame.height - header_at - 1 - body.height)
