"""Normalise stage: tidying, placeholders, countries, coordinates, limits and the reject split."""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placeflow.pipeline.normalize import LIMITS, normalize
from placeflow.pipeline.read import PLACE_FIELDS
from tests.pipeline.conftest import read_frame


def one(**fields: str | None) -> dict[str, Any]:
    """Normalise one row: its place dict, or its reject dict."""
    places, rejects, _ = normalize(read_frame({"poi_name": "Place", **fields}))
    row: dict[str, Any] = places.row(0, named=True) if places.height else rejects.row(0, named=True)
    return row


def test_whitespace_is_trimmed_and_folded_and_nothing_else_changes() -> None:
    """Ends are trimmed, runs of any whitespace become one space, case and punctuation stay."""
    row = one(poi_name="  Joe's\t\tPIZZA \u00a0 & Co.\n", street="1  Main\r\nSt.", city=" Paris")
    assert (row["poi_name"], row["street"], row["city"]) == (
        "Joe's PIZZA & Co.",
        "1 Main St.",
        "Paris",
    )


PLACEHOLDER_SPELLINGS = ["", "   ", "N/A", "n/a", "NA", "null", "NULL", "None", "-", "--", "?",
                         "Not Available", "NOT AVAILABLE", "unknown", "#N/A"]  # fmt: skip


@pytest.mark.parametrize("value", PLACEHOLDER_SPELLINGS)
def test_placeholders_become_null(value: str) -> None:
    """A whole value that only means "no value" becomes null, in any case."""
    assert one(street=value, city=value)["street"] is None


@pytest.mark.parametrize("value", ["Unknown Pleasures Bar", "N/A Street", "Nonesuch", "-5th Ave"])
def test_text_merely_containing_a_placeholder_is_kept(value: str) -> None:
    """Placeholders match whole values only: a name with 'unknown' in it is a name."""
    assert one(poi_name=value)["poi_name"] == value


def test_a_dumps_null_marker_is_missing_and_keeps_its_row() -> None:
    r"""`\N` (how MySQL and PostgreSQL dumps write NULL; the UK's Open Pubs file has it in
    latitude and longitude) is a missing value like NA or NULL: the row is kept, its
    coordinates and street empty, never rejected as 'not a number'."""
    row = one(latitude="\\N", longitude="\\N", street="\\N", country="\\N")
    assert "reason" not in row, row
    assert (row["latitude"], row["longitude"], row["street"], row["country"]) == (None,) * 4
    assert one(poi_name="\\N")["reason"] == "poi_name is missing ('\\N' is a placeholder)"


def test_missing_or_placeholder_name_is_rejected_with_a_reason() -> None:
    """No name, or a placeholder name, is a reject saying so."""
    assert one(poi_name=None)["reason"] == "poi_name is missing"
    assert one(poi_name=" N/A ")["reason"] == "poi_name is missing ('N/A' is a placeholder)"


@pytest.mark.parametrize(
    ("given", "alpha2"),
    [("us", "US"), ("USA", "US"), ("U.S.A.", "US"), ("United States", "US"), ("deu", "DE"),
     ("Germany", "DE"), ("UK", "GB"), ("Great Britain", "GB"), ("russia", "RU"),
     ("South Korea", "KR"), ("the Netherlands", "NL"), ("Cote d'Ivoire", "CI"),
     ("Côte d\u2019Ivoire", "CI"), ("Bolivia", "BO"), ("Türkiye", "TR"), ("NA", "NA"),
     ("Congo", "CG")],
)  # fmt: skip
def test_country_codes_and_names_become_alpha2(given: str, alpha2: str) -> None:
    """Alpha-2 in any case, alpha-3, names and common aliases map to alpha-2 ('NA' is Namibia)."""
    assert one(country=given)["country"] == alpha2


@pytest.mark.parametrize("given", ["Atlantis", "XX", "Korea", "840", "US-CA", "Europe"])
def test_unknown_or_ambiguous_country_is_rejected_not_guessed(given: str) -> None:
    """Text that is no (unambiguous) ISO 3166 country is a reject quoting it."""
    row = one(country=given)
    assert row["field"] == "country"
    assert row["reason"] == (
        f"country '{given}' is not an ISO 3166 country; use a 2-letter code such as US"
    )


@pytest.mark.parametrize("field", sorted(LIMITS))
def test_each_limit_accepts_its_maximum_and_rejects_one_more(field: str) -> None:
    """A value of exactly the limit is kept; one character more is rejected, saying both numbers."""
    limit = LIMITS[field]
    at = "é" * (limit - 1) + "🍕"
    assert one(**{field: at})[field] == at
    rejected = one(**{field: at + "x"})
    assert rejected["field"] == field
    assert rejected["reason"] == (
        f"{field} is {limit + 1} characters; the service accepts at most {limit}"
    )


def test_limits_apply_after_trimming() -> None:
    """Surrounding whitespace does not count against a limit."""
    assert one(postcode="   " + "9" * 40 + "   ")["postcode"] == "9" * 40


def test_megabyte_field_is_rejected_with_its_length_and_raw_kept() -> None:
    """A name of megabytes is one reject stating its length; raw keeps the value verbatim."""
    big = "🍕" * 2_000_000
    row = one(poi_name=big)
    assert row["reason"] == "poi_name is 2000000 characters; the service accepts at most 200"
    assert json.loads(str(row["raw"]))["poi_name"] == big


@pytest.mark.parametrize(
    ("latitude", "longitude", "reason"),
    [
        ("95.2", "10", "latitude '95.2' is outside -90..90"),
        ("-90.0001", "10", "latitude '-90.0001' is outside -90..90"),
        ("10", "180.5", "longitude '180.5' is outside -180..180"),
        ("abc", "10", "latitude 'abc' is not a number"),
        ("40.7,-74.0", "10", "latitude '40.7,-74.0' is not a number"),
        ("40,5,1", "10", "latitude '40,5,1' is not a number"),
        ("NaN", "10", "latitude 'NaN' is not a finite number"),
        ("10", "-inf", "longitude '-inf' is not a finite number"),
        ("95", None, "latitude '95' is outside -90..90"),
    ],
)
def test_bad_coordinates_are_rejected(latitude: str, longitude: str | None, reason: str) -> None:
    """Non-numbers, NaN/inf and out-of-range values are rejects, even without their pair."""
    row = one(latitude=latitude, longitude=longitude)
    assert row["reason"] == reason


def test_coordinates_in_range_are_numbers_including_the_bounds() -> None:
    """Valid coordinates (bounds included, any spacing) become Float64."""
    row = one(latitude=" -90 ", longitude="180")
    assert (row["latitude"], row["longitude"], row["note"]) == (-90.0, 180.0, None)


def test_a_decimal_comma_reads_as_a_decimal_point() -> None:
    """48,8566 as a spreadsheet in many locales writes it (e.g. in a ';'-separated export)."""
    row = one(latitude="48,8566", longitude=" -2,3522 ", country="FR")
    assert (row["latitude"], row["longitude"], row["note"]) == (48.8566, -2.3522, None)


@pytest.mark.parametrize(
    ("latitude", "longitude", "note"),
    [
        ("40.7", None, "latitude given without longitude; both dropped"),
        ("N/A", "-74", "longitude given without latitude; both dropped"),
    ],
)
def test_half_a_coordinate_pair_is_dropped_with_a_note(
    latitude: str, longitude: str | None, note: str
) -> None:
    """One coordinate without the other: both become null and the note says which was given."""
    row = one(latitude=latitude, longitude=longitude)
    assert (row["latitude"], row["longitude"], row["note"]) == (None, None, note)


def test_several_problems_are_one_reject_listing_them_all() -> None:
    """Every problem of a row is in its one reason, joined by '; ', field the first of them."""
    places, rejects, _ = normalize(
        read_frame({"poi_name": "", "postcode": "1" * 41, "country": "Atlantis", "latitude": "x"})
    )
    assert places.height == 0
    assert rejects.select("field", "reason").row(0) == (
        "poi_name",
        "poi_name is missing; postcode is 41 characters; the service accepts at most 40; "
        "country 'Atlantis' is not an ISO 3166 country; use a 2-letter code such as US; "
        "latitude 'x' is not a number",
    )


def test_read_error_becomes_a_row_reject() -> None:
    """A record the reader flagged is rejected as a whole row with the reader's reason."""
    _, rejects, _ = normalize(read_frame({"poi_name": "A", "read_error": "row has more values"}))
    assert rejects.select("field", "reason").row(0) == ("row", "row has more values")


def test_strings_that_look_dangerous_are_kept_verbatim() -> None:
    """Injection strings, emoji and right-to-left text are data: kept exactly (bar trimming)."""
    values = [
        "'; drop table runs; --",
        '=HYPERLINK("http://evil.example","click")',
        "+cmd|' /C calc'!A0",
        "Café 🍕👨‍👩‍👧",
        "\u0645\u0637\u0639\u0645 \u200f\u0627\u0644\u0634\u0631\u0642",  # Arabic, RLM
        "<script>alert(1)</script>",
    ]
    places, _, _ = normalize(read_frame(*[{"poi_name": v, "street": v} for v in values]))
    assert places.get_column("poi_name").to_list() == values
    assert places.get_column("street").to_list() == values


def test_reject_columns_and_raw_json_of_the_input() -> None:
    """Rejects carry the row's keys, field, reason, and its raw input as a JSON object."""
    frame = read_frame({"source_id": "s1", "poi_name": " x ", "latitude": "999", "longitude": "1"})
    _, rejects, _ = normalize(frame)
    assert rejects.columns == [
        "row_ord", "source_file", "source_row", "source_id", "field", "reason", "raw",
    ]  # fmt: skip
    raw = json.loads(rejects.item(0, "raw"))
    assert raw == {"id": "s1", **dict.fromkeys(PLACE_FIELDS), "poi_name": " x ",
                   "latitude": "999", "longitude": "1"}  # fmt: skip


def test_summary_counts() -> None:
    """NormalizeInfo counts rows, kept, rejected, nulled pairs and mapped countries."""
    frame = read_frame(
        {"poi_name": "A", "country": "usa"},
        {"poi_name": "A", "country": "US"},
        {"poi_name": "A", "latitude": "1"},
        {"poi_name": "A", "latitude": "x"},
        {"poi_name": None},
    )
    _, _, info = normalize(frame)
    assert (info.rows, info.kept, info.rejected) == (5, 3, 2)
    assert (info.coordinates_nulled, info.countries_mapped) == (1, 1)
    assert info.rejected_by_field == {"latitude": 1, "poi_name": 1}


def test_empty_input_gives_empty_outputs() -> None:
    """Zero rows in, zero rows out, with the output columns."""
    places, rejects, info = normalize(read_frame())
    assert (places.height, rejects.height, info.rows) == (0, 0, 0)
    assert places.columns[-1] == "note"


texts = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "N/A", "na", "Unknown", "usa", "DE", "Atlantis", "1e3", "nan"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30),
    st.from_regex(r"-?[0-9]{1,3}(\.[0-9]{1,6})?", fullmatch=True),
)
rows = st.lists(st.fixed_dictionaries({f: texts for f in PLACE_FIELDS}), max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows)
def test_every_input_row_lands_in_exactly_one_output(data: list[dict[str, str | None]]) -> None:
    """Kept and rejected row_ords partition the input exactly, each in input order."""
    places, rejects, info = normalize(read_frame(*data))
    kept, rejected = places.get_column("row_ord").to_list(), rejects.get_column("row_ord").to_list()
    assert sorted(kept + rejected) == list(range(len(data)))
    assert kept == sorted(kept) and rejected == sorted(rejected)
    assert (info.kept, info.rejected) == (len(kept), len(rejected))
    assert rejects.get_column("reason").null_count() == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows)
def test_normalising_twice_changes_nothing(data: list[dict[str, str | None]]) -> None:
    """normalize(normalize(x).places) keeps every place unchanged and rejects none."""
    places, _, _ = normalize(read_frame(*data))
    again, rejects, _ = normalize(places)
    assert rejects.height == 0
    assert again.equals(places)


@settings(max_examples=30, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-90, max_value=90))
def test_latitude_text_round_trips(value: float) -> None:
    """A latitude written with repr() reads back as the same float."""
    row = one(latitude=repr(value), longitude="0")
    assert row["latitude"] == value and not math.isnan(float(str(row["latitude"])))


def test_frame_without_optional_columns_is_accepted() -> None:
    """A frame with only some fields (and no read_error) is normalised, the rest null."""
    places, _, _ = normalize(pl.DataFrame({"row_ord": [0], "poi_name": ["A"]}))
    assert places.select("poi_name", "city", "source_row").row(0) == ("A", None, 1)
