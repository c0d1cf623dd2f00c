"""Read stage in batches: the stream's batches, joined, are read_inputs' frame and info, for every
kind of input and any batch size; the common CSV case streams in bounded batches."""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from placeflow.options import RunOptions
from placeflow.pipeline.read import (
    OUTPUT_SCHEMA,
    InputError,
    ReadInfo,
    ReadStream,
    read_inputs,
    stream_inputs,
)
from placeflow.pipeline.source import FileSource, stream
from tests.pipeline.conftest import SAMPLES, WriteFile

SIZES = (1, 2, 3, 7, 1_000_000)


def assert_streams_as_read(
    patterns: list[str], sizes: tuple[int, ...] = SIZES, **kwargs: Any
) -> pl.DataFrame:
    """For each batch size: batches of at most that many rows, row_ord 0.. across them, equal
    (joined) to read_inputs' frame, and the same ReadInfo; returns the frame."""
    whole, info = read_inputs(patterns, **kwargs)
    for size in sizes:
        read = stream_inputs(patterns, batch_rows=size, **kwargs)
        batches = list(read)
        assert all(0 < b.height <= size for b in batches)
        assert all(b.schema == pl.Schema(OUTPUT_SCHEMA) for b in batches)
        joined = pl.concat([pl.DataFrame(schema=OUTPUT_SCHEMA), *batches])
        assert_frame_equal(joined, whole)
        assert joined.get_column("row_ord").to_list() == list(range(whole.height))
        assert read.info == info
    return whole


def _parquet(tmp_path: Path) -> list[str]:
    path = tmp_path / "p.parquet"
    pl.DataFrame(
        {
            "store_id": [7, 8, 9],
            "Store Name": ["A", "B", None],
            "lat": [40.7128, -33.5, 0.0],
            "lng": pl.Series([-74.006, 151.25, 1.5], dtype=pl.Float32),
            "zip": [2134, None, 1],
            "opened": pl.Series(["2024-01-02", None, "2020-02-29"]).str.to_date(),
        }
    ).write_parquet(path, row_group_size=2)
    return [str(path)]


def _glob(write: WriteFile) -> list[str]:
    write("name\nb1\nb2\n", "in/b.csv")
    write("name\na1\n", "in/a.csv")
    return [str(write("name\nc1\n", "in/c.csv").parent / "*.csv")]


def _late_bad_byte(write: WriteFile) -> list[str]:
    body = "".join(f"Cafe {i},Paris,FR\n" for i in range(150))
    return [str(write(("name,city,country\n" + body).encode() + b"Caf\xe9 Bad,Paris,FR\nX,Y,Z\n"))]


def _late_ragged(write: WriteFile) -> list[str]:
    body = "".join(f"Cafe {i},Paris\n" for i in range(40))
    return [str(write("name,city\n" + body + "Bad,row,extra\n\nLast,One\n"))]


def _mixed(write: WriteFile) -> list[str]:
    first = write("Nom du lieu,Ville\nLe Bar,Paris\n\n", "odd.csv")
    second = write("name,lat,lat,lon\nA,1,2,3\nB,4,5,6\n", "plain.csv")
    return [str(first), str(second), str(write("", "empty.csv"))]


QUOTED = 'id,name,addr\n1,"Smith, Jones & ""Co""","1 Main St\r\nSuite 2"\n2,B,x\n3,"C\n\nD",\n'
CASES: dict[str, Callable[[WriteFile], list[str]]] = {
    "schema": lambda w: [str(w("Name,lat,extra\nA,1.5,x\n"))],
    "bom": lambda w: [str(w(b"\xef\xbb\xbfname,city\nCaf\xc3\xa9,Paris\nB,C\n"))],
    "quoted": lambda w: [str(w(QUOTED))],
    "crlf": lambda w: [str(w("name,city\r\nA,B\r\n\r\nC,D\r\n,\r\nE,F"))],
    "glob": _glob,
    "empty": lambda w: [
        str(w("", "e.csv")),
        str(w("\n\n", "b.csv")),
        str(w("name,city\n", "h.csv")),
    ],
    "ragged": lambda w: [str(w("name,city,zip\nA,x,1\nB,y,2,EXTRA\nC,z,3,\nD,w,4,,,E\nF\n"))],
    "blank": lambda w: [str(w("name\nA\n\nB\n,\n"))],
    "header after blanks": lambda w: [str(w("\n\n\nname,city\nA,B\n\nC,D\n,\n"))],
    "bad byte late": _late_bad_byte,
    "ragged late": _late_ragged,
    "duplicate header and mapping per file": _mixed,
    "long field": lambda w: [str(w("name,city\n" + "x" * 20_000 + ",A\nB,C\n"))],
    "leading zeros": lambda w: [str(w('name,zip\n"=A(""x"")",02134\n🍕 Pizza,00501\n'))],
}
MAPPINGS = {"duplicate header and mapping per file": {"odd.csv:poi_name": "Nom du lieu"}}


@pytest.mark.parametrize("case", list(CASES))
def test_batches_joined_are_the_whole_read(write_file: WriteFile, case: str) -> None:
    """Each messy input streams, in batches of any size, to read_inputs' frame and info."""
    assert_streams_as_read(CASES[case](write_file), mapping=MAPPINGS.get(case))


def test_samples_parquet_gzip_and_encodings_stream_as_read(
    tmp_path: Path, write_file: WriteFile
) -> None:
    """The sample guides, Parquet (several row groups), gzip, cp1252 and UTF-16 stream as read."""
    samples = assert_streams_as_read([str(SAMPLES / "restaurants_*.csv")], (7, 100, 1_000_000))
    assert samples.height == 864
    parquet = assert_streams_as_read(_parquet(tmp_path), mapping={"id": "store_id"})
    assert parquet.get_column("latitude").to_list() == ["40.7128", "-33.5", "0.0"]
    packed = tmp_path / "p.csv.gz"
    packed.write_bytes(gzip.compress(b"name,city\nA,B\n\nC,D\n"))
    assert assert_streams_as_read([str(packed)]).height == 2
    cp1252 = write_file("name,city\nCafé “Noir”,Zürich\nB,C\n", "cp.csv", encoding="cp1252")
    assert assert_streams_as_read([str(cp1252)], encoding="cp1252").height == 2
    utf16 = write_file("name,city\nÆble,Oslo\n", "u16.csv", encoding="utf-16")
    assert assert_streams_as_read([str(utf16)], encoding="utf-16").height == 1


def test_header_problems_are_raised_when_the_stream_is_made(write_file: WriteFile) -> None:
    """A missing name column or a bad --map is an InputError before any batch is asked for."""
    with pytest.raises(InputError, match="no column looks like a place name"):
        stream_inputs([str(write_file("sku,addr\n1,2\n"))])
    with pytest.raises(InputError, match="--map city=Town names a column"):
        stream_inputs([str(write_file("name\nA\n"))], mapping={"city": "Town"})


def test_late_quoting_error_is_raised_mid_stream(write_file: WriteFile) -> None:
    """Broken quoting far into a file raises today's InputError while the batches are read."""
    path = write_file("name,city\n" + "A,B\n" * 5000 + '"A" x,B\n')
    read = stream_inputs([str(path)], batch_rows=10)
    with pytest.raises(InputError, match=r"places\.csv: a quoted value is not closed"):
        list(read)
    with pytest.raises(RuntimeError, match="exhausted"):
        _ = read.info


def test_info_before_exhaustion_raises(write_file: WriteFile) -> None:
    """`info` is known only once every batch has been taken."""
    read = stream_inputs([str(write_file("name\nA\nB\nC\n"))], batch_rows=2)
    assert next(read).height == 2
    with pytest.raises(RuntimeError, match="exhausted"):
        _ = read.info
    assert [b.height for b in read] == [1]
    assert read.info.rows == 3


def test_file_source_and_a_whole_frame_stream(write_file: WriteFile) -> None:
    """FileSource streams through `stream`; ReadStream.whole cuts one frame into batches."""
    path = write_file("name\nA\nB\nC\n")
    read = stream(FileSource((str(path),)), RunOptions(), 2)
    assert [b.height for b in read] == [2, 1]
    frame, info = read_inputs([str(path)])
    whole = ReadStream.whole(frame, info, batch_rows=2)
    assert_frame_equal(pl.concat(list(whole)), frame)
    assert whole.info == info
    assert isinstance(whole.info, ReadInfo)


def test_large_csv_never_yields_more_than_a_batch(tmp_path: Path) -> None:
    """200k rows with batch_rows=50_000: four batches of 50k, no more, in row order."""
    path = tmp_path / "big.csv"
    n = 200_000
    pl.select(
        pl.format("Place {}", pl.int_range(n)).alias("name"), pl.lit("Paris").alias("city")
    ).write_csv(path)
    read = stream_inputs([str(path)], batch_rows=50_000)
    heights, last = [], -1
    for batch in read:
        heights.append(batch.height)
        assert batch.item(0, "row_ord") == last + 1
        last = batch.item(-1, "row_ord")
    assert heights == [50_000] * 4
    assert read.info.rows == n


FIELD = st.text(alphabet='ab ,"\n\ré', max_size=6)


def _csv(rows: list[list[str]]) -> str:
    def quoted(value: str) -> str:
        return '"' + value.replace('"', '""') + '"' if set(value) & set(',"\n\r') else value

    return "".join(",".join(quoted(v) for v in row) + "\n" for row in rows)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.lists(FIELD, min_size=0, max_size=4), max_size=12),
    blank_lead=st.integers(0, 2),
)
def test_generated_csvs_stream_as_read(rows: list[list[str]], blank_lead: int) -> None:
    """Any small CSV (quotes, newlines in values, blank and short rows) streams as read."""
    text = "\n" * blank_lead + "name,city\n" + _csv(rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "g.csv"
        path.write_text(text, encoding="utf-8", newline="")
        try:
            read_inputs([str(path)])
        except InputError as err:  # e.g. a row with more values than the header
            with pytest.raises(InputError, match=str(err)[:30].replace("(", r"\(")):
                list(stream_inputs([str(path)], batch_rows=1))
            return
        assert_streams_as_read([str(path)], (1, 3, 1_000_000))
