"""Read stage: files, globs, encodings, column recognition and every kind of hostile input."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from placeflow.options import RunOptions
from placeflow.pipeline.read import (
    OUTPUT_SCHEMA,
    RAGGED_REASON,
    InputError,
    expand_inputs,
    read_inputs,
)
from tests.pipeline.conftest import SAMPLES, WriteFile


def read_one(path: Path, **kwargs: Any) -> pl.DataFrame:
    rows, _ = read_inputs([str(path)], **kwargs)
    return rows


def test_samples_read_every_row_with_its_columns() -> None:
    """The two sample guides read as 533 + 331 rows, `addr` as the street line, `phone` for
    the fuzzy pass."""
    rows, info = read_inputs([str(SAMPLES / "restaurants_*.csv")])
    fodors, zagat = (str(SAMPLES / f"restaurants_{n}.csv") for n in ("fodors", "zagat"))
    assert info.rows_per_file == {fodors: 533, zagat: 331}
    assert rows.height == info.rows == 864
    assert info.columns[zagat] == {
        "poi_name": "name",
        "id": "id",
        "street": "addr",
        "city": "city",
        "phone": "phone",
    }
    assert rows.row(533, named=True) | {"row_ord": 533} == {
        **rows.row(533, named=True),
        "source_file": zagat,
        "source_row": 1,
        "source_id": "1",
        "poi_name": "apple pan  the",
        "street": "10801 w. pico blvd.",
    }


def test_output_has_exactly_the_documented_columns_and_types(write_file: WriteFile) -> None:
    """The frame's schema is OUTPUT_SCHEMA, whatever columns the file had."""
    rows = read_one(write_file("Name,lat,extra\nA,1.5,x\n"))
    assert rows.schema == pl.Schema(OUTPUT_SCHEMA)
    assert rows.row(0, named=True)["latitude"] == "1.5"


def test_utf8_byte_order_mark_is_not_part_of_the_first_column(write_file: WriteFile) -> None:
    """A UTF-8 BOM before the header does not hide the first column's name."""
    rows = read_one(write_file(b"\xef\xbb\xbfname,city\nCaf\xc3\xa9,Paris\n"))
    assert rows.select("poi_name", "city").row(0) == ("Café", "Paris")


def test_other_encoding_is_read_when_given(write_file: WriteFile) -> None:
    """A cp1252 file reads correctly with encoding='cp1252'."""
    path = write_file("name,city\nCafé “Noir”,Zürich\n", encoding="cp1252")
    assert read_one(path, encoding="cp1252").select("poi_name", "city").row(0) == (
        "Café “Noir”",
        "Zürich",
    )


def test_undecodable_bytes_are_an_error_naming_line_and_flag(write_file: WriteFile) -> None:
    """Bytes invalid in the encoding raise InputError naming the file, the line and --encoding."""
    path = write_file(b"name,city\nok,Paris\nCaf\xe9,Lyon\n")
    with pytest.raises(InputError, match=r"places\.csv: byte 0xe9 on line 3.*--encoding cp1252"):
        read_one(path)


def test_utf16_reads_with_its_encoding(write_file: WriteFile) -> None:
    """A UTF-16 file (with BOM) reads with encoding='utf-16' and says so without it."""
    path = write_file("name,city\nÆble,Oslo\n", encoding="utf-16")
    assert read_one(path, encoding="utf-16").select("poi_name", "city").row(0) == ("Æble", "Oslo")
    with pytest.raises(InputError, match="utf-16"):
        read_one(path)


def test_unknown_encoding_name_is_an_input_error(write_file: WriteFile) -> None:
    """An --encoding that is no codec raises InputError listing good ones."""
    with pytest.raises(InputError, match=r"unknown encoding 'klingon'.*cp1252"):
        read_one(write_file("name\nA\n"), encoding="klingon")


def test_quoted_commas_and_newlines_stay_in_one_value(write_file: WriteFile) -> None:
    """Quoted commas, quotes and newlines stay verbatim; source_row counts records, not lines."""
    path = write_file('id,name,addr\n1,"Smith, Jones & ""Co""","1 Main St\r\nSuite 2"\n2,B,x\n')
    rows = read_one(path)
    assert rows.select("source_row", "source_id", "poi_name", "street").rows() == [
        (1, "1", 'Smith, Jones & "Co"', "1 Main St\r\nSuite 2"),
        (2, "2", "B", "x"),
    ]


def test_glob_reads_several_files_in_order(write_file: WriteFile) -> None:
    """A glob reads every match, sorted, with row_ord running across files."""
    write_file("name\nb1\nb2\n", "in/b.csv")
    write_file("name\na1\n", "in/a.csv")
    path = write_file("name\nc1\n", "in/c.csv")
    rows, info = read_inputs([str(path.parent / "*.csv")])
    assert [Path(f).name for f in info.files] == ["a.csv", "b.csv", "c.csv"]
    assert rows.select("row_ord", "source_row", "poi_name").rows() == [
        (0, 1, "a1"),
        (1, 1, "b1"),
        (2, 2, "b2"),
        (3, 1, "c1"),
    ]


def test_expand_inputs_keeps_pattern_order_and_each_file_once(write_file: WriteFile) -> None:
    """Patterns keep their order, globs are sorted, a file named twice is read once."""
    b = write_file("name\n", "b.csv")
    a = write_file("name\n", "a.csv")
    found = expand_inputs([str(b), str(a.parent / "*.csv"), str(a)])
    assert found == [b, a]


@pytest.mark.parametrize("pattern", ["missing.csv", "nothing-*.csv"])
def test_pattern_matching_nothing_is_an_input_error(tmp_path: Path, pattern: str) -> None:
    """A path or glob that matches no file raises InputError naming it."""
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([str(tmp_path / pattern)])


def test_directory_is_an_input_error_suggesting_a_glob(tmp_path: Path) -> None:
    """A directory raises InputError suggesting dir/*.csv."""
    with pytest.raises(InputError, match=r"is a directory.*\*\.csv"):
        expand_inputs([str(tmp_path)])


def test_parquet_numbers_and_odd_types_become_text(tmp_path: Path) -> None:
    """Parquet ints, floats, dates and booleans arrive as their text; unused columns are ignored."""
    path = tmp_path / "p.parquet"
    pl.DataFrame(
        {
            "store_id": [7, 8],
            "Store Name": ["A", "B"],
            "lat": [40.7128, -33.5],
            "lng": pl.Series([-74.006, 151.25], dtype=pl.Float32),
            "zip": [2134, None],
            "opened": pl.Series(["2024-01-02", None]).str.to_date(),
            "tags": [["x"], ["y"]],
        }
    ).write_parquet(path)
    rows, info = read_inputs([str(path)], mapping={"id": "store_id", "region": "opened"})
    assert rows.select("source_row", "source_id", "poi_name", "latitude", "longitude").rows() == [
        (1, "7", "A", "40.7128", "-74.006"),
        (2, "8", "B", "-33.5", "151.25"),
    ]
    assert rows.get_column("postcode").to_list() == ["2134", None]
    assert rows.get_column("region").to_list() == ["2024-01-02", None]
    assert info.columns[str(path)]["poi_name"] == "Store Name"


def test_parquet_nested_column_mapped_to_a_field_is_an_input_error(tmp_path: Path) -> None:
    """A list column mapped to a place field raises InputError saying what to do."""
    path = tmp_path / "p.parquet"
    pl.DataFrame({"name": ["A"], "tags": [["x"]]}).write_parquet(path)
    with pytest.raises(InputError, match=r"column 'tags' holds List.*--map"):
        read_inputs([str(path)], mapping={"city": "tags"})


def test_file_named_parquet_that_is_not_is_an_input_error(write_file: WriteFile) -> None:
    """A .parquet file without Parquet's magic bytes raises InputError, not a traceback."""
    with pytest.raises(InputError, match="not a Parquet file"):
        read_one(write_file("name\nA\n", "fake.parquet"))


def test_truncated_parquet_is_an_input_error(tmp_path: Path) -> None:
    """A Parquet file cut short raises InputError."""
    path = tmp_path / "cut.parquet"
    pl.DataFrame({"name": ["A"] * 100}).write_parquet(path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(InputError, match="cannot be read as Parquet"):
        read_one(path)


def test_explicit_mapping_wins_over_recognised_names(write_file: WriteFile) -> None:
    """--map poi_name=Store Name is used even though a `name` column exists."""
    path = write_file("name,Store Name,addr\nbrand,Shop 1,1 Main St\n")
    rows, info = read_inputs([str(path)], mapping={"poi_name": "Store Name"})
    assert rows.get_column("poi_name").to_list() == ["Shop 1"]
    assert info.columns[str(path)] == {"poi_name": "Store Name", "street": "addr"}


def test_mapping_to_a_missing_column_is_an_input_error(write_file: WriteFile) -> None:
    """A mapping naming a column the file lacks raises InputError listing its columns."""
    with pytest.raises(InputError, match=r"--map city=Town names a column.*'name', 'addr'"):
        read_inputs([str(write_file("name,addr\nA,B\n"))], mapping={"city": "Town"})


def test_mapping_an_unknown_field_is_an_input_error(write_file: WriteFile) -> None:
    """A mapping key that is not a place field or id raises InputError listing the fields."""
    with pytest.raises(InputError, match=r"unknown field.*'email'.*poi_name.*phone, website"):
        read_inputs([str(write_file("name\nA\n"))], mapping={"email": "name"})


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("POI_NAME,Street Address,CITY,State,Postal-Code,Country,Latitude,LNG", "street"),
        ("name,address,city", "street"),
        ("name,address", "address"),
        ("name,full_address,city", "address"),
        ("Name,Addr,Zip", "street"),
        ("Company,Address Line 1,Town,Post Code,Country,lat,long", "street"),
        ("title,street,city,postalCode,state,countryCode,location/lat,location/lng", "street"),
    ],
)
def test_common_column_names_are_recognised(
    write_file: WriteFile, header: str, expected: str
) -> None:
    """Names match ignoring case and separators; a bare `address` beside a city is the street."""
    columns = header.split(",")
    path = write_file(header + "\n" + ",".join(f"v{i}" for i in range(len(columns))) + "\n")
    rows, info = read_inputs([str(path)])
    chosen = info.columns[str(path)]
    assert chosen["poi_name"] == columns[0]
    assert chosen[expected] == columns[1]
    assert rows.get_column(expected).to_list() == ["v1"]
    if columns[-1].lower().endswith(("lng", "long")):
        assert (chosen["latitude"], chosen["longitude"]) == (columns[-2], columns[-1])


def test_a_websites_column_is_the_website(write_file: WriteFile) -> None:
    """`websites` (as exports with several sites per place name it) is the website column,
    which the fuzzy dedupe compares."""
    path = write_file("name,Websites,phones\nA,https://a.example,+1 555 0100\n")
    rows, info = read_inputs([str(path)])
    assert info.columns[str(path)]["website"] == "Websites"
    assert rows.get_column("website").to_list() == ["https://a.example"]


def test_header_only_and_empty_files_give_no_rows(write_file: WriteFile) -> None:
    """Empty, blank-only and header-only files read as zero rows and are reported as empty."""
    paths = [
        write_file("", "empty.csv"),
        write_file("\n\n", "blank.csv"),
        write_file("name,city\n", "header.csv"),
    ]
    rows, info = read_inputs([str(p) for p in paths])
    assert rows.height == 0
    assert rows.schema == pl.Schema(OUTPUT_SCHEMA)
    assert info.empty_files == tuple(str(p) for p in paths)


def test_file_without_a_name_column_is_an_input_error(write_file: WriteFile) -> None:
    """No recognisable name column: InputError listing the columns and suggesting --map."""
    with pytest.raises(
        InputError, match=r"no column looks like a place name.*'sku', 'addr'.*--map"
    ):
        read_one(write_file("sku,addr\n1,2\n"))


def test_binary_junk_is_an_input_error(write_file: WriteFile) -> None:
    """Random bytes raise InputError (binary, or not valid text), never a traceback."""
    junk = bytes(range(256)) * 64 + os.urandom(4096)
    with pytest.raises(InputError, match="binary"):
        read_one(write_file(junk, "junk.csv"))


def test_excel_workbook_is_refused_with_advice(write_file: WriteFile) -> None:
    """An .xlsx (ZIP) saved as .csv raises InputError saying to save it as CSV."""
    with pytest.raises(InputError, match=r"Excel.*save it as CSV"):
        read_one(write_file(b"PK\x03\x04" + b"\x00" * 100, "book.csv"))


def test_broken_quoting_is_an_input_error(write_file: WriteFile) -> None:
    """Text after a closing quote raises InputError about quoting."""
    with pytest.raises(InputError, match="quot"):
        read_one(write_file('name,city\n"A" x,B\n'))


def test_ragged_rows_are_flagged_and_short_rows_padded(write_file: WriteFile) -> None:
    """More values than the header flags the row; fewer leave nulls; one trailing comma is fine."""
    path = write_file("name,city,zip\nA,x,1\nB,y,2,EXTRA\nC,z,3,\nD,w,4,,,E\nF\n")
    rows, info = read_inputs([str(path)])
    assert rows.select("poi_name", "city", "read_error").rows() == [
        ("A", "x", None),
        ("B", "y", RAGGED_REASON),
        ("C", "z", None),
        ("D", "w", RAGGED_REASON),
        ("F", None, None),
    ]
    assert info.ragged_rows == 2


def test_blank_lines_are_skipped_but_counted_in_source_row(write_file: WriteFile) -> None:
    """Blank records are dropped (and counted); source_row still points at the right record."""
    rows, info = read_inputs([str(write_file("name\nA\n\nB\n,\n"))])
    assert rows.select("source_row", "poi_name").rows() == [(1, "A"), (3, "B")]
    assert info.blank_rows == 2


def test_leading_zeros_and_odd_strings_are_kept_verbatim(write_file: WriteFile) -> None:
    """Postcodes keep leading zeros; injection, emoji and right-to-left text are untouched."""
    values = ["'; drop table runs; --", '=HYPERLINK("http://x","y")', "🍕 Pizza", "مطعم الشرق"]
    lines = [f'"{v.replace(chr(34), chr(34) * 2)}",02134' for v in values]
    rows = read_one(write_file("name,zip\n" + "\n".join(lines) + "\n"))
    assert rows.get_column("poi_name").to_list() == values
    assert set(rows.get_column("postcode")) == {"02134"}


def test_megabyte_field_is_read_whole(write_file: WriteFile) -> None:
    """A single field of several megabytes is read whole (normalize rejects it)."""
    big = "x" * 3_000_000
    rows = read_one(write_file(f"name,city\n{big},A\nB,C\n"))
    assert rows.get_column("poi_name").str.len_chars().to_list() == [3_000_000, 1]


def test_gzip_csv_is_read(tmp_path: Path) -> None:
    """A gzip-compressed CSV reads like the plain file."""
    path = tmp_path / "p.csv.gz"
    path.write_bytes(gzip.compress(b"name,city\nA,B\n"))
    assert read_one(path).select("poi_name", "city").row(0) == ("A", "B")


def test_file_without_a_header_row_is_an_input_error(write_file: WriteFile) -> None:
    """A file whose first row is data is refused, suggesting a header or --map."""
    with pytest.raises(InputError, match=r".Joe's Pizza., '1 Main St'.*add a header"):
        read_one(write_file("Joe's Pizza,1 Main St\nCafe Bizou,2 Elm St\n"))


def test_utf8_file_read_with_another_encoding_is_an_input_error(write_file: WriteFile) -> None:
    """A UTF-8 file (with BOM) read as latin-1 is refused rather than turned into mojibake."""
    with pytest.raises(InputError, match="it is UTF-8, not iso8859-1"):
        read_one(write_file(b"\xef\xbb\xbfname\nCaf\xc3\xa9\n"), encoding="latin-1")


def test_a_parquet_struct_taken_by_its_name_names_the_field_and_can_be_left_out(
    tmp_path: Path,
) -> None:
    """A Parquet struct named `address` beside a city is taken as the street by its name: the
    refusal names that field and the way out; `--map street=` leaves the field out, and the
    rest of the file reads."""
    path = tmp_path / "p.parquet"
    pl.DataFrame(
        {"name": ["A"], "address": [{"line1": "1 Main St", "zip": "02134"}], "city": ["Boston"]}
    ).write_parquet(path)
    refused = r"'address' holds Struct.*taken by its name as the field street.*--map street= to"
    with pytest.raises(InputError, match=refused):
        read_inputs([str(path)])
    rows, info = read_inputs([str(path)], mapping={"street": ""})
    assert rows.select("poi_name", "street", "address", "city").rows() == [
        ("A", None, None, "Boston")
    ]
    assert info.columns[str(path)] == {"poi_name": "name", "city": "city"}


def test_map_to_no_column_leaves_a_recognised_field_out(write_file: WriteFile) -> None:
    """`--map city=` (and `FILE:phone=`): the column recognised by its name is not used (and,
    no city used, a bare `address` is the whole address); the option parses FIELD= as a field
    left out."""
    path = write_file("name,address,city,phone\nA,1 Main St,Springfield,555\n")
    rows, info = read_inputs([str(path)], mapping={"city": "", f"{path.name}:phone": ""})
    assert info.columns[str(path)] == {"poi_name": "name", "address": "address"}
    assert rows.select("city", "phone").rows() == [(None, None)]
    assert RunOptions.parse({"mapping": ["street="]}).mapping == (("street", ""),)
