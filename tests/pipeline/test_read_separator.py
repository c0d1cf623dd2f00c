"""CSV inputs with another character than a comma between values (`--separator`; tab by default
for .tsv and .tab files, else the one a header line without commas holds): read exactly as the
same rows written with commas, streamed or whole."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from placeflow.errors import OptionsError
from placeflow.options import RunOptions
from placeflow.pipeline.csvfile import separator_for
from placeflow.pipeline.read import RAGGED_REASON, InputError, ragged_reason, read_inputs
from tests.pipeline.conftest import WriteFile
from tests.pipeline.test_read_stream import assert_streams_as_read

HEADER = ["name", "street", "city", "zip"]
ROWS = [
    ["Café; Bar | Tab\tHouse", "1 Main St", "Springfield", "02134"],
    ['The "Quoted" Diner', "2 Elm, Suite 3", "Shelbyville", ""],
    ["Line\nBreak Bistro", "3 Oak", "Ogdenville", "00501"],
    [],  # a blank record: dropped and counted
    ["Short Row"],  # fewer values than the header: the rest null
    ["Long Row", "4 Pine", "Capital City", "9", "EXTRA"],  # more: flagged as ragged
    ["Ünïcödé Ëatery", "5 Ash", "North Haverbrook", "12345"],
]


def as_csv(rows: list[list[str]], separator: str) -> str:
    """The rows as CSV text with `separator` between values, quoting what needs it."""

    def quoted(value: str) -> str:
        special = set(value) & {separator, '"', "\n", "\r"}
        return '"' + value.replace('"', '""') + '"' if special else value

    return "".join(separator.join(quoted(v) for v in row) + "\n" for row in [HEADER, *rows])


def without_file(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop("source_file")


@pytest.mark.parametrize("separator", [";", "|", "\t"])
def test_a_file_with_another_separator_reads_as_its_comma_twin(
    write_file: WriteFile, separator: str
) -> None:
    """Quoted separators, commas and line breaks, blank, short and ragged rows: every value,
    flag and count the same as the comma-separated file's, in any batch size; a ragged row's
    reason names the file's own separator."""
    comma = write_file(as_csv(ROWS, ","), "comma.csv")
    other = write_file(as_csv(ROWS, separator), "other.csv")
    expected, expected_info = read_inputs([str(comma)])
    assert expected.get_column("poi_name").to_list()[0] == "Café; Bar | Tab\tHouse"
    assert expected.get_column("read_error").to_list().count(RAGGED_REASON) == 1
    rows = assert_streams_as_read([str(other)], (1, 2, 1_000_000), separator=separator)
    own = rows.get_column("read_error").to_list()
    assert own.count(ragged_reason(separator)) == 1 and "comma" not in ragged_reason(separator)
    as_comma = pl.col("read_error").replace(ragged_reason(separator), RAGGED_REASON)
    assert_frame_equal(without_file(rows.with_columns(as_comma)), without_file(expected))
    _, info = read_inputs([str(other)], separator=separator)
    counts = (info.rows, info.blank_rows, info.ragged_rows)
    assert counts == (expected_info.rows, expected_info.blank_rows, expected_info.ragged_rows)
    assert counts == (6, 1, 1)


def test_another_encoding_with_another_separator(write_file: WriteFile) -> None:
    """A cp1252 file with ';' (Excel's export in many locales) is decoded, then split at ';'."""
    text = as_csv([r for r in ROWS if r and "\t" not in r[0] and "Ü" not in r[0]], ";")
    text += "Crème Brûlée;6 Birch;Paris;75001\n"
    path = write_file(text, "excel.csv", encoding="cp1252")
    rows, _ = read_inputs([str(path)], encoding="cp1252", separator=";")
    assert rows.get_column("poi_name").to_list()[-1] == "Crème Brûlée"
    assert rows.row(-1, named=True)["postcode"] == "75001"


@pytest.mark.parametrize("name", ["places.tsv", "places.TAB", "places.tsv.gz"])
def test_tsv_and_tab_files_are_read_with_tab_unless_told_otherwise(
    write_file: WriteFile, name: str
) -> None:
    text = as_csv(ROWS, "\t").encode()
    path = write_file(gzip.compress(text) if name.endswith(".gz") else text, name)
    rows, _ = read_inputs([str(path)])
    assert rows.get_column("city").to_list()[:2] == ["Springfield", "Shelbyville"]
    assert separator_for(path, None) == "\t"
    assert separator_for(path, ";") == ";"
    assert separator_for(Path("x.csv"), None) == separator_for(Path("x.tsv.bak"), None) == ","


@pytest.mark.parametrize("separator", [";", "|", "\t"])
def test_a_header_without_commas_names_the_separator(write_file: WriteFile, separator: str) -> None:
    """Without --separator, a .csv file whose header line holds no comma and one of ; tab |
    is split at it: the same rows as its comma twin (its values may hold commas, and the
    others), gzipped or not."""
    comma, _ = read_inputs([str(write_file(as_csv(ROWS, ","), "comma.csv"))])
    other = write_file(as_csv(ROWS, separator), "other.csv")
    packed = write_file(gzip.compress(as_csv(ROWS, separator).encode()), "other.csv.gz")
    assert separator_for(other, None) == separator_for(packed, None) == separator
    as_comma = pl.col("read_error").replace(ragged_reason(separator), RAGGED_REASON)
    for path in (other, packed):
        rows, _ = read_inputs([str(path)])
        assert_frame_equal(without_file(rows.with_columns(as_comma)), without_file(comma))


def test_an_excel_file_in_another_encoding_needs_no_separator(write_file: WriteFile) -> None:
    """The header line is decoded with --encoding before it is looked at."""
    excel = write_file("Nom;Ville\nCrème Brûlée;Paris\n", "excel.csv", encoding="cp1252")
    mapping = {"poi_name": "Nom", "city": "Ville"}
    rows, _ = read_inputs([str(excel)], encoding="cp1252", mapping=mapping)
    assert rows.select("poi_name", "city").row(0) == ("Crème Brûlée", "Paris")


def test_a_header_with_several_candidates_is_refused_naming_the_flag(
    write_file: WriteFile,
) -> None:
    """A header line holding two of ; tab | (and no comma) says nothing sure: read with
    commas it has one column, and is refused, saying which flag reads it."""
    path = write_file("name;city|zip\nA;B|1\n")
    assert separator_for(path, None) == ","
    with pytest.raises(InputError, match=r"';' between values: pass --separator ';'"):
        read_inputs([str(path)])
    assert read_inputs([str(path)], separator=";")[0].get_column("poi_name").to_list() == ["A"]


@pytest.mark.parametrize(("given", "kept"), [(";", ";"), ("tab", "\t"), ("\\t", "\t"), ("|", "|")])
def test_separator_option_takes_one_character_or_tab(given: str, kept: str) -> None:
    assert RunOptions.parse({"separator": given}).separator == kept


@pytest.mark.parametrize("given", ["", ";;", "a", "7", '"', "\n", "é"])
def test_separator_option_refuses_what_cannot_separate_values(given: str) -> None:
    with pytest.raises(OptionsError, match="--separator takes one character"):
        RunOptions.parse({"separator": given})


def test_separator_counts_in_a_runs_identity_only_when_given() -> None:
    """Runs made before the option existed keep their identity (so they are still resumed)."""
    plain = json.loads(RunOptions().identity_json())
    assert "separator" not in plain
    assert json.loads(RunOptions(separator=";").identity_json()) == {**plain, "separator": ";"}
    stored = RunOptions(separator=";").stored_json()
    assert RunOptions.parse(stored).separator == ";"
    assert RunOptions.parse(RunOptions().stored_json()).separator is None


def test_a_well_formed_file_with_another_separator_streams_never_read_whole(
    write_file: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Block by block, as a comma file streams (each later block parsed behind a blank record
    of the file's width, written with its separator): the whole-file fallback is never taken."""
    rows = [r for r in ROWS if len(r) == len(HEADER)] * 50
    comma, _ = read_inputs([str(write_file(as_csv(rows, ","), "comma.csv"))])
    other = write_file(as_csv(rows, ";"), "other.csv")

    def whole(*_: object) -> None:
        raise AssertionError("the file was read whole")

    monkeypatch.setattr("placeflow.pipeline.csvfile._whole", whole)
    streamed = assert_streams_as_read([str(other)], (1, 7, 1_000_000), separator=";")
    assert_frame_equal(without_file(streamed), without_file(comma))


@pytest.mark.parametrize(
    ("first", "says"),
    [("sep=;", "'sep=;': delete it)"), ("sep=,", "'sep=,': delete it)")],
)
def test_excels_separator_line_is_named_in_the_refusal(
    write_file: WriteFile, first: str, says: str
) -> None:
    """A file that starts with Excel's "sep=" line is refused saying what to do about it."""
    sep = first[-1]
    path = write_file(f"{first}\nname{sep}city\nA{sep}B\n")
    with pytest.raises(
        InputError, match=re.escape(f"its first line is Excel's separator line {says}")
    ):
        read_inputs([str(path)])
