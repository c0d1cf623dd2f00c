"""Repairs of lost ZIP zeros and impossible coordinates (placeflow.pipeline.repair)."""

from __future__ import annotations

import polars as pl
import pytest

from placeflow.pipeline.repair import check_coordinates, repair, restore_postcodes


def _places(rows: list[tuple[str | None, str | None, float | None, float | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"country": pl.String, "postcode": pl.String, "latitude": pl.Float64,
                "longitude": pl.Float64},
        orient="row",
    ).with_columns(pl.lit(None, pl.String).alias("note"))  # fmt: skip


@pytest.mark.parametrize(
    ("country", "given", "restored"),
    [
        ("US", "901", "00901"),
        ("US", "2134", "02134"),
        ("PR", "901-1234", "00901-1234"),
        ("US", "0213-4567", "00213-4567"),
    ],
)
def test_zip_codes_that_lost_leading_zeros_are_padded(
    country: str, given: str, restored: str
) -> None:
    """A 3- or 4-digit ZIP of a ZIP-code country gets its zeros back, and the note says so."""
    out, count = restore_postcodes(_places([(country, given, None, None)]))
    assert count == 1
    assert out["postcode"].to_list() == [restored]
    assert out["note"][0] == f"postcode {given} restored to {restored} (leading zeros lost)"


@pytest.mark.parametrize(
    ("country", "postcode"),
    [("US", "12345"), ("FR", "0750"), ("GB", "123"), (None, "901"), ("US", "99"), ("US", None)],
)
def test_postcodes_are_left_alone_where_the_country_does_not_make_it_certain(
    country: str | None, postcode: str | None
) -> None:
    """Full ZIPs, other countries' short postcodes, rows without a country: unchanged."""
    out, count = restore_postcodes(_places([(country, postcode, None, None)]))
    assert count == 0
    assert out["postcode"].to_list() == [postcode]
    assert out["note"].to_list() == [None]


def test_a_flipped_longitude_sign_is_repaired() -> None:
    """(38.80, +90.73) for a US row is in China; the flipped reading is Missouri: repaired."""
    out, repaired, dropped = check_coordinates(_places([("US", None, 38.80, 90.73)]))
    assert (repaired, dropped) == (1, 0)
    assert out.select("latitude", "longitude").row(0) == (38.80, -90.73)
    assert out["note"][0] == "coordinates (38.8, 90.73) repaired: longitude's sign flipped"


def test_swapped_latitude_and_longitude_are_repaired() -> None:
    """A Paris row given as (2.35, 48.85) is read back as (48.85, 2.35)."""
    out, repaired, _ = check_coordinates(_places([("FR", None, 2.35, 48.85)]))
    assert repaired == 1
    assert out.select("latitude", "longitude").row(0) == (48.85, 2.35)
    assert "latitude and longitude swapped" in out["note"][0]


def test_a_coordinate_no_reading_places_in_the_country_is_dropped_not_sent() -> None:
    """(10, 10) is Nigeria whichever way it is read: a US row loses both coordinates."""
    out, repaired, dropped = check_coordinates(_places([("US", None, 10.0, 10.0)]))
    assert (repaired, dropped) == (0, 1)
    assert out.select("latitude", "longitude").row(0) == (None, None)
    assert out["note"][0] == "coordinates (10.0, 10.0) cannot be in US; not sent"


@pytest.mark.parametrize(
    ("country", "lat", "lon"),
    [
        ("US", 40.7128, -74.0060),  # New York
        ("US", 61.2181, -149.9003),  # Anchorage
        ("US", 21.3069, -157.8583),  # Honolulu
        ("JP", 35.6762, 139.6503),
        ("AU", -33.8688, 151.2093),
        ("FJ", -17.7134, 178.0650),  # near the antimeridian
        ("NZ", -43.5321, 172.6362),
        (None, 10.0, 10.0),  # no country: not judged
    ],
)
def test_coordinates_in_their_country_are_kept(country: str | None, lat: float, lon: float) -> None:
    """Good coordinates, far-flung states and the antimeridian included, are not touched."""
    places = _places([(country, None, lat, lon)])
    out, repaired, dropped = check_coordinates(places)
    assert (repaired, dropped) == (0, 0)
    assert out.equals(places)


def test_repair_keeps_every_row_and_column_in_order() -> None:
    """Repairs change values and notes only: same rows, same order, same columns."""
    rows = [("US", "901", 38.80, 90.73), ("FR", None, 48.85, 2.35), (None, None, None, None)] * 5
    places = _places(rows).with_row_index("row_ord")
    out, info = repair(places)
    assert out.columns == places.columns
    assert out["row_ord"].to_list() == list(range(15))
    assert (info.postcodes_restored, info.coordinates_repaired, info.coordinates_dropped) == (
        5,
        5,
        0,
    )


def test_hidden_characters_are_removed_and_nul_rejects_the_row() -> None:
    """ESC and bidi overrides are removed with a note; a NUL byte rejects its row, with a reason."""
    from placeflow.pipeline.normalize import normalize

    rows = pl.DataFrame(
        {"poi_name": ["Cafe\x1b[31m Red", "Evil\u202eyrddab", "Nul\x00here", "Fine"]}
    )
    places, rejects, info = normalize(rows)
    assert places["poi_name"].to_list() == ["Cafe[31m Red", "Evilyrddab", "Fine"]
    assert places["note"].to_list()[:2] == ["control or bidi-override characters removed"] * 2
    assert places["note"][2] is None
    assert rejects.select("source_row", "field", "reason").rows() == [
        (3, "poi_name", "poi_name contains a NUL byte")
    ]
    assert info.rows == info.kept + info.rejected


def test_store_directory_headers_are_recognised() -> None:
    """`State/Province` feeds region and `Store Number` the id (both were ignored before)."""
    from placeflow.pipeline.columns import resolve_columns

    header = ["Store Number", "Store Name", "Street Address", "City", "State/Province", "Country"]
    chosen = resolve_columns(header, {})
    assert chosen["region"] == header.index("State/Province")
    assert chosen["id"] == header.index("Store Number")


@pytest.mark.parametrize(
    ("where", "latitude", "longitude"),
    [
        ("Adak, Alaska (326 people: no town of the gazetteer's)", 51.868, -176.640),
        ("Attu, Alaska, east of the antimeridian", 52.93, 173.18),
        ("the antimeridian itself, 180.0 as -180.0", 51.5, 180.0),
        ("San Juan, Puerto Rico, its country given as the US", 18.4655, -66.1057),
        ("Hagåtña, Guam, its country given as the US", 13.4757, 144.7489),
    ],
)
def test_valid_us_coordinates_beyond_the_states_are_kept(
    where: str, latitude: float, longitude: float
) -> None:
    """US places in the Aleutians (which cross the antimeridian) and in US territories written
    with country USA are where they say: kept as given, no note (they were dropped as 'cannot
    be in US')."""
    out, repaired, dropped = check_coordinates(_places([("US", None, latitude, longitude)]))
    assert (repaired, dropped) == (0, 0), where
    assert out.select("latitude", "longitude", "note").row(0) == (latitude, longitude, None)


def test_territories_widen_their_country_only() -> None:
    """Puerto Rico's cells are the US's, not France's; a US row in Paris is still dropped."""
    rows = [("FR", None, 18.4655, -66.1057), ("US", None, 48.85, 2.35)]
    out, repaired, dropped = check_coordinates(_places(rows))
    assert (repaired, dropped) == (0, 2)
    assert out["latitude"].to_list() == [None, None]
