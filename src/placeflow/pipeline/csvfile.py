"""Parse one CSV file into raw text columns: encodings, byte-order marks, quoting, ragged rows.

Every value is read as text (no type inference), so postcodes keep their leading zeros.
The common case (UTF-8, not compressed, well-formed) streams: the file is read in blocks that
end at a record boundary (a newline outside quotes), each parsed strictly by polars, so memory
holds about one batch of records whatever the file's size. Only when a block fails to parse, or
the file is gzip-compressed or in another encoding, is the file read whole into memory (the
records already given are skipped, so the batches are the same): to decode another encoding,
to report bytes that are not valid in the encoding (never replaced silently), or to find rows
with more fields than the header. Such rows are flagged (`extra_fields`) for rejection, since
their values may be shifted; extra values that are all empty are tolerated (OVERFLOW of them
are looked at). Rows with fewer fields than the header are kept, the missing values null.
Blank records (every value empty) are dropped and counted; `source_row` is the record number,
so it still points at the right record. A few bytes that are not valid UTF-8 (on at most one
line in a hundred) reject only their rows (`bad_bytes`); more than that means the file has
another encoding and it is refused with a hint.
"""

from __future__ import annotations

import codecs
import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from placeflow.errors import SourceProblem

OVERFLOW = 8
"""Spare columns read past the header's width to see a ragged row's extra values."""
UTF8 = frozenset({"utf-8", "utf-8-sig"})
BOM = b"\xef\xbb\xbf"
ROW = "__row"
GZIP = b"\x1f\x8b"
RECORD_BYTES = 64
"""Bytes a record is guessed to take, to size the first block (later blocks use the measure)."""
MAX_BLOCK = 64 << 20
"""The largest block read at once (a record longer than this is still read whole)."""
NOT_TEXT = {
    b"PK\x03\x04": "a ZIP archive or an Excel .xlsx workbook; save it as CSV first",
    b"\xd0\xcf\x11\xe0": "an Excel .xls workbook; save it as CSV first",
    b"%PDF": "a PDF document, not a table",
    b"\x89PNG": "a PNG image, not a table",
    b"SQLite format 3": "a SQLite database; export the table as CSV first",
}
TAB_SUFFIXES = frozenset({".tsv", ".tab"})
"""Files named so are read with tab between values unless a separator is given."""
MARK = "\ufdd0"
"""Stands in for a byte that is not valid UTF-8 (a Unicode noncharacter: never in real text)."""
SHOWN = "\ufffd"
"""What such a byte is shown as in a rejected row's raw values."""
BAD_BYTES_REASON = (
    "the row has bytes that are not valid UTF-8 (shown as \ufffd); fix them in the file, or "
    "pass --encoding if the whole file has another encoding"
)


SEPARATORS = (";", "\t", "|")
"""What stands between values when not a comma, found in a header line that has no comma."""
EXCEL_SEP_LINE = re.compile(r"(?i)sep=.?")
"""Excel's first line naming the separator ("sep=;"), whole: refused, never read as a header."""
HEAD_BYTES = 1 << 16
"""How much of a file is read to find its header line."""


def separator_for(path: Path, given: str | None, codec: str = "utf-8") -> str:
    """The character between a file's values: the one given, else tab for a .tsv or .tab file
    (gzipped too), else the one of SEPARATORS its header line holds when it holds no comma
    and no other of them (Excel writes ';' in many locales), else a comma. Found from the
    file's content alone, so every read of one file splits it alike."""
    if given is not None:
        return given
    suffixes = [suffix.lower() for suffix in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    if suffixes and suffixes[-1] in TAB_SUFFIXES:
        return "\t"
    line = _header_line(path, codec)
    if line is None or "," in line or EXCEL_SEP_LINE.fullmatch(line.strip()):
        return ","  # Excel's "sep=;" line is refused, naming it (columns.resolve_columns)
    found = [s for s in SEPARATORS if s in line]
    return found[0] if len(found) == 1 else ","


def _header_line(path: Path, codec: str) -> str | None:
    """The file's first line, decoded (None when it cannot be read: the read says why)."""
    try:
        with path.open("rb") as raw:
            head = raw.read(HEAD_BYTES)
        if head.startswith(GZIP):
            with gzip.open(path, "rb") as unpacked:
                head = unpacked.read(HEAD_BYTES)
    except (OSError, EOFError):
        return None
    text = head.decode(codec, errors="replace").lstrip("\ufeff")
    return text.split("\n", 1)[0].rstrip("\r")


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
    if codec in UTF8 and not head.startswith(GZIP) and b"\x00" in head:
        utf16 = head[:2] in (b"\xff\xfe", b"\xfe\xff")
        hint = " (UTF-16 text? pass --encoding utf-16)" if utf16 else ""
        raise SourceProblem(f"the file contains NUL bytes: it is binary, not CSV text{hint}")


def _utf8_bytes(path: Path, codec: str) -> bytes:
    raw = path.read_bytes()
    if raw.startswith(GZIP):
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


def _parse(source: Path | bytes, separator: str) -> pl.DataFrame:
    """Every record as text, the header record included as the first row (strict widths)."""
    return pl.read_csv(
        source,
        has_header=False,
        separator=separator,
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


def _parse_ragged(data: bytes, separator: str) -> pl.DataFrame:
    """Parse with spare columns past the header's width, flagging rows with values in them."""
    try:
        first = pl.read_csv(
            data, has_header=False, n_rows=1, infer_schema=False, truncate_ragged_lines=True,
            raise_if_empty=False, separator=separator,
        )  # fmt: skip
        names = separator.join(f"c{i}" for i in range(first.width + OVERFLOW)).encode()
        frame = pl.read_csv(
            names + b"\n" + data, infer_schema=False, truncate_ragged_lines=True,
            raise_if_empty=False, row_index_name=ROW, separator=separator,
        )  # fmt: skip
    except pl.exceptions.PolarsError as err:
        raise SourceProblem(_explain(err)) from None
    spare = frame.columns[1 + first.width :]
    # Extra empty values ("a,b,c,,") are a common export quirk and lose nothing.
    extra = pl.any_horizontal([pl.col(c).is_not_null() & (pl.col(c) != "") for c in spare])
    return frame.with_columns(extra.fill_null(False).alias("extra_fields")).drop(spare)


def _positional(frame: pl.DataFrame, offset: int) -> pl.DataFrame:
    """ROW (Int64, from `offset`), then the values as c0, c1, ... (the parse's names vary)."""
    values = [c for c in frame.columns if c != ROW]
    named = frame.rename({c: f"c{i}" for i, c in enumerate(values)})
    return named.with_columns((pl.col(ROW).cast(pl.Int64) + offset).alias(ROW))


def _record_end(buf: bytes) -> int:
    """The end of the last whole record in `buf` (just past a newline outside quotes), or 0."""
    quotes = buf.count(b'"')
    end = len(buf)
    while (at := buf.rfind(b"\n", 0, end)) >= 0:
        quotes -= buf.count(b'"', at, end)  # quotes before the newline at `at`
        if quotes % 2 == 0:
            return at + 1
        end = at
    return 0


def _blocks(path: Path, batch_rows: int, separator: str) -> Iterator[pl.DataFrame]:
    """Every record of a UTF-8 file, block by block, parsed strictly (a PolarsError when a
    block is not well-formed). Each later block is parsed behind a blank line of the first
    record's width, so its width is the file's, as in one parse of the whole file."""
    width: int | None = None
    done = 0
    per_record = RECORD_BYTES
    carry = b""
    with path.open("rb") as handle:
        while True:
            size = min(max(batch_rows * per_record, 64), MAX_BLOCK)
            chunk = handle.read(max(size, len(carry)))
            eof = not chunk
            buf = carry + chunk if carry else chunk
            del chunk  # one copy of the block's bytes at a time, not several
            if not buf:
                return
            cut = len(buf) if eof else _record_end(buf)
            if cut == 0:
                carry = buf  # no whole record yet: read on (a bigger block next)
                continue
            carry = buf[cut:]
            with memoryview(buf) as whole, whole[:cut] as view:
                if width is not None:
                    block = b"".join((separator.encode() * (width - 1) + b"\n", view))
                else:
                    block = buf if cut == len(buf) else bytes(view)
            del buf
            if width is None:
                frame = _positional(_parse(block, separator), 0)
                width = frame.width - 1
            else:
                frame = _positional(_parse(block, separator).slice(1), done - 1)
            del block
            if frame.height:
                per_record = max(1, cut // frame.height)
                done += frame.height
                yield frame
            if eof:
                return


def _whole(path: Path, codec: str, separator: str) -> tuple[pl.DataFrame, bool]:
    """Every record of the file read whole (decoded, bad bytes marked, ragged rows flagged),
    and whether bad bytes were marked."""
    data = _utf8_bytes(path, codec)
    try:
        frame = _parse(data, separator).with_columns(pl.lit(False).alias("extra_fields"))
    except pl.exceptions.PolarsError:
        frame = _parse_ragged(data, separator)
    values = _positional(frame.drop("extra_fields"), 0)
    return values.with_columns(frame.get_column("extra_fields")), MARK.encode() in data


def _flags(frame: pl.DataFrame, marks: bool) -> pl.DataFrame:
    """`bad_bytes` (and marked bytes shown as SHOWN) for a file with marks; False otherwise."""
    columns = [c for c in frame.columns if c not in (ROW, "extra_fields")]
    if not marks or not columns:
        return frame.with_columns(pl.lit(False).alias("bad_bytes"))
    marked = pl.any_horizontal([pl.col(c).str.contains(MARK, literal=True) for c in columns])
    return frame.with_columns(marked.fill_null(False).alias("bad_bytes")).with_columns(
        [pl.col(c).str.replace_all(MARK, SHOWN, literal=True) for c in columns]
    )


def records(
    path: Path, codec: str, batch_rows: int, separator: str = ","
) -> Iterator[pl.DataFrame]:
    """Every record of the file (the header and blank ones too) in frames: ROW (the record's
    index from 0), c0... (text), `extra_fields`, `bad_bytes`; values split at `separator`.
    Streams the common case; reads the file whole otherwise (see the module docstring)."""
    done = 0
    if codec in UTF8:
        with path.open("rb") as handle:
            compressed = handle.read(2) == GZIP
        blocks = None if compressed else _blocks(path, batch_rows, separator)
        while blocks is not None:
            try:
                frame = next(blocks)
            except StopIteration:
                return
            except pl.exceptions.PolarsError:
                break  # read it whole below, to say exactly what is wrong or flag the rows
            done += frame.height
            yield _flags(frame.with_columns(pl.lit(False).alias("extra_fields")), False)
    whole, marks = _whole(path, codec, separator)
    rest = _flags(whole.filter(pl.col(ROW) >= done), marks)
    for offset in range(0, rest.height, batch_rows):
        yield rest.slice(offset, batch_rows)


class CsvBatches:
    """A CSV file's data records, batch by batch. The header is the first record that is not
    blank (found when made: header problems are raised at once); `blank_rows` counts the blank
    records after it, complete once the batches are exhausted."""

    def __init__(self, path: Path, codec: str, batch_rows: int, separator: str = ",") -> None:
        self.separator = separator
        self._records = records(path, codec, batch_rows, separator)
        self.header: list[str] = []
        self.blank_rows = 0
        self._header_at = 0
        self._first: pl.DataFrame | None = None
        for frame in self._records:
            values = frame.columns[1:-2]
            filled = frame.filter(~_blank(values)) if values else frame.clear()
            if filled.height:
                row = filled.select(values).row(0)
                self.header = ["" if v is None else str(v) for v in row]
                if any("\x00" in h for h in self.header):
                    raise SourceProblem("the file contains NUL bytes: it is binary, not CSV text")
                self._header_at = int(filled.item(0, ROW))
                self._first = frame.filter(pl.col(ROW) > self._header_at)
                break

    def __iter__(self) -> Iterator[pl.DataFrame]:
        """Data records: the header's columns (c0...), ROW (the record number counted from the
        header, blank records included), `extra_fields`, `bad_bytes`; blank records dropped."""
        if self._first is None:
            return
        first, self._first = self._first, None
        for frame in _chain(first, self._records):
            blank = _blank(frame.columns[1:-2])
            blanks = int(frame.select(blank.sum()).item())
            body = frame.filter(~blank) if blanks else frame  # most batches have none: no copy
            self.blank_rows += blanks
            yield body.select(
                *body.columns[1:-2],
                (pl.col(ROW) - self._header_at).alias(ROW),
                "extra_fields",
                "bad_bytes",
            )


def _chain(first: pl.DataFrame, rest: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    yield first
    yield from rest


def _blank(columns: list[str]) -> pl.Expr:
    return pl.all_horizontal([pl.col(c).is_null() for c in columns])


def read_csv_table(path: Path, codec: str, separator: str = ",") -> CsvTable:
    """Parse a CSV file whole (see the module docstring for how each kind of mess is handled):
    the batches of `CsvBatches`, in one frame."""
    batches = CsvBatches(path, codec, 1 << 30, separator)
    body = list(batches)
    if not batches.header:
        schema = {ROW: pl.Int64, "extra_fields": pl.Boolean, "bad_bytes": pl.Boolean}
        return CsvTable([], pl.DataFrame(schema=schema), 0)
    return CsvTable(batches.header, pl.concat(body, how="vertical"), batches.blank_rows)
