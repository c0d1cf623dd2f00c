"""Repairs of the two data faults real place files carry most: lost ZIP zeros, bad coordinates.

- **ZIP codes that lost their leading zeros** (a spreadsheet read "00901" as the number 901):
  a 3- or 4-digit postcode (optionally with a ZIP+4 suffix) of a country that uses US ZIP codes
  is padded back to 5 digits. Only where the country makes it certain; elsewhere postcodes of
  any length are valid and stay as given.
- **Coordinates that cannot be in the row's country**: a flipped sign (38.80, +90.73 for a
  Missouri store) or swapped latitude and longitude. A coordinate is checked against the
  0.5-degree cells in which its country has towns (GeoNames, see `data/SOURCES.md`). One that
  lies within `NEAR_CELLS` of them is kept. One that does not is repaired when exactly the
  flipped or swapped reading lies among its country's cells (`REPAIR_CELLS`); otherwise both
  coordinates are dropped, since a coordinate known to be wrong is never sent. Rows without a
  country, or of a country with no cells, are not judged. A country's cells include its
  territories' (`TERRITORIES`: a US file writes Puerto Rico's places USA) and the few areas
  whose towns are too small for the gazetteer (`SPARSE_AREAS`: Alaska's Aleutians, across the
  antimeridian).

Every repair is written into the row's `note`, and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

ZIP_COUNTRIES = ("US", "PR", "VI", "GU", "AS", "MP", "UM")
"""Countries and territories that use US ZIP codes (five digits, leading zeros common)."""
CELL_DEGREES = 0.5
NEAR_CELLS = 3
"""A coordinate within this many cells (about 165 km) of its country's towns is kept as given."""
REPAIR_CELLS = 1
"""A flipped or swapped reading must land this close (about 55 km) to the country's towns."""
CELLS_FILE = Path(__file__).resolve().parent / "data" / "country_cells.parquet"
TERRITORIES: dict[str, tuple[str, ...]] = {
    "US": ("PR", "VI", "GU", "AS", "MP", "UM"),
    "FR": ("GP", "MQ", "GF", "RE", "YT", "PM", "BL", "MF", "NC", "PF", "WF"),
    "NL": ("AW", "CW", "SX", "BQ"),
    "GB": ("GG", "JE", "IM"),
    "DK": ("GL", "FO"),
    "NO": ("SJ",),
    "FI": ("AX",),
    "AU": ("CX", "CC", "NF"),
    "NZ": ("CK", "NU", "TK"),
}
"""Territories whose places files often give the sovereign country (ISO 3166 codes them apart):
their cells count as the country's too."""
SPARSE_AREAS: dict[str, tuple[tuple[float, float, float, float], ...]] = {
    "US": ((51.0, 55.5, 172.0, 180.0), (51.0, 55.5, -180.0, -162.0)),
}
"""(south, north, west, east) boxes a country has places in whose towns the gazetteer of towns
of 1,000 people misses: the Aleutian Islands (Adak, 326 people, at 51.87, -176.64; Attu at
172.9 E), on both sides of the antimeridian."""
LON_CELLS = int(360 / CELL_DEGREES)
_LOST_ZEROS = r"^\d{3,4}(?:-\d{4})?$"


@dataclass(frozen=True)
class RepairInfo:
    postcodes_restored: int
    coordinates_repaired: int
    coordinates_dropped: int


def _cell(value: pl.Expr) -> pl.Expr:
    return (value / CELL_DEGREES).floor().cast(pl.Int32)


def _wrapped(lon_cell: pl.Expr) -> pl.Expr:
    """A longitude cell within -180..180 degrees (it wraps at the antimeridian)."""
    return (lon_cell + LON_CELLS // 2) % LON_CELLS - LON_CELLS // 2


def _town_cells() -> pl.DataFrame:
    """(country, lat_cell, lon_cell) where the country has towns: the gazetteer's, its
    territories' (TERRITORIES) and its sparse areas' (SPARSE_AREAS)."""
    cells = pl.read_parquet(CELLS_FILE).with_columns(pl.col("^.*_cell$").cast(pl.Int32))
    owned = {t: country for country, ts in TERRITORIES.items() for t in ts}
    theirs = cells.filter(pl.col("country").is_in(list(owned))).with_columns(
        pl.col("country").replace_strict(owned, return_dtype=pl.String)
    )
    boxes = [
        (country, lat, lon)
        for country, areas in SPARSE_AREAS.items()
        for south, north, west, east in areas
        for lat in range(int(south // CELL_DEGREES), int(north // CELL_DEGREES) + 1)
        for lon in range(int(west // CELL_DEGREES), int(-(-east // CELL_DEGREES)))
    ]
    sparse = pl.DataFrame(
        boxes, schema={"country": pl.String, "lat_cell": pl.Int32, "lon_cell": pl.Int32},
        orient="row",
    )  # fmt: skip
    return pl.concat([cells, theirs, sparse])


@lru_cache(maxsize=4)
def country_cells(reach: int) -> pl.DataFrame:
    """(country, cell) pairs within `reach` cells of a cell where the country has a town."""
    offsets = pl.DataFrame(
        [(dy, dx) for dy in range(-reach, reach + 1) for dx in range(-reach, reach + 1)],
        schema={"dy": pl.Int32, "dx": pl.Int32},
        orient="row",
    )
    return (
        _town_cells()
        .join(offsets, how="cross")
        .select(
            "country",
            (pl.col("lat_cell") + pl.col("dy")).alias("lat_cell"),
            _wrapped(pl.col("lon_cell") + pl.col("dx")).alias("lon_cell"),
        )
        .unique()
    )


def _fits(frame: pl.DataFrame, lat: str, lon: str, reach: int, name: str) -> pl.DataFrame:
    """`frame` with a Boolean column `name`: whether (lat, lon) lies among the country's cells."""
    probe = frame.select(
        "_i",
        "country",
        _cell(pl.col(lat)).alias("lat_cell"),
        _wrapped(_cell(pl.col(lon))).alias("lon_cell"),  # 180.0 is -180.0
    ).filter(pl.col("lat_cell").is_not_null() & pl.col("lon_cell").is_not_null())
    hits = probe.join(country_cells(reach), on=["country", "lat_cell", "lon_cell"], how="semi")
    return frame.with_columns(pl.col("_i").is_in(hits["_i"].implode()).alias(name))


def _add_note(note: pl.Expr, text: pl.Expr) -> pl.Expr:
    return pl.when(note.is_null()).then(text).otherwise(pl.concat_str(note, pl.lit("; "), text))


def restore_postcodes(places: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Pad ZIP codes that lost their leading zeros, where the country uses ZIP codes."""
    lost = (
        pl.col("country").is_in(ZIP_COUNTRIES) & pl.col("postcode").str.contains(_LOST_ZEROS)
    ).fill_null(False)
    count = int(places.select(lost.sum()).item())
    if not count:
        return places, 0
    head = pl.col("postcode").str.split("-").list.first()
    tail = pl.col("postcode").str.slice(head.str.len_chars())
    fixed = head.str.zfill(5) + tail
    return places.with_columns(
        pl.when(lost).then(fixed).otherwise(pl.col("postcode")).alias("postcode"),
        pl.when(lost)
        .then(
            _add_note(
                pl.col("note"),
                pl.format(
                    "postcode {} restored to {} (leading zeros lost)", pl.col("postcode"), fixed
                ),
            )
        )
        .otherwise(pl.col("note"))
        .alias("note"),
    ), count


def check_coordinates(places: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """Repair or drop coordinates that cannot lie in the row's country (module docstring)."""
    judged = (
        pl.col("country").is_not_null()
        & pl.col("latitude").is_not_null()
        & pl.col("longitude").is_not_null()
    )
    work = places.with_row_index("_i").filter(judged).select("_i", "country", "latitude",
                                                              "longitude")  # fmt: skip
    if work.height == 0:
        return places, 0, 0
    known = pl.read_parquet(CELLS_FILE, columns=["country"]).unique()
    work = work.join(known, on="country", how="semi")
    work = _fits(work, "latitude", "longitude", NEAR_CELLS, "_ok")
    bad = work.filter(~pl.col("_ok"))
    if bad.height == 0:
        return places, 0, 0
    readings = {
        "longitude's sign flipped": (pl.col("latitude"), -pl.col("longitude")),
        "latitude's sign flipped": (-pl.col("latitude"), pl.col("longitude")),
        "both signs flipped": (-pl.col("latitude"), -pl.col("longitude")),
        "latitude and longitude swapped": (pl.col("longitude"), pl.col("latitude")),
    }
    fix_lat: pl.Expr = pl.lit(None, pl.Float64)
    fix_lon: pl.Expr = pl.lit(None, pl.Float64)
    why: pl.Expr = pl.lit(None, pl.String)
    for n, (label, (lat, lon)) in enumerate(readings.items()):
        bad = bad.with_columns(lat.alias(f"_lat{n}"), lon.alias(f"_lon{n}"))
        valid = (pl.col(f"_lat{n}").abs() <= 90) & (pl.col(f"_lon{n}").abs() <= 180)
        bad = _fits(bad, f"_lat{n}", f"_lon{n}", REPAIR_CELLS, f"_fit{n}")
        hit = pl.col(f"_fit{n}") & valid & why.is_null()
        fix_lat = pl.when(hit).then(pl.col(f"_lat{n}")).otherwise(fix_lat)
        fix_lon = pl.when(hit).then(pl.col(f"_lon{n}")).otherwise(fix_lon)
        why = pl.when(hit).then(pl.lit(label)).otherwise(why)
    verdict = bad.select("_i", fix_lat.alias("_fix_lat"), fix_lon.alias("_fix_lon"),
                         why.alias("_why"))  # fmt: skip
    repaired = verdict.filter(pl.col("_why").is_not_null()).height
    dropped = verdict.height - repaired
    given = pl.format("({}, {})", pl.col("latitude"), pl.col("longitude"))
    text = (
        pl.when(pl.col("_why").is_not_null())
        .then(pl.format("coordinates {} repaired: {}", given, pl.col("_why")))
        .otherwise(pl.format("coordinates {} cannot be in {}; not sent", given, pl.col("country")))
    )
    out = (
        places.with_row_index("_i")
        .join(verdict, on="_i", how="left")
        .with_columns(
            pl.when(pl.col("_i").is_in(verdict["_i"].implode()))
            .then(_add_note(pl.col("note"), text))
            .otherwise(pl.col("note"))
            .alias("note"),
            pl.when(pl.col("_i").is_in(verdict["_i"].implode()))
            .then(pl.col("_fix_lat"))
            .otherwise(pl.col("latitude"))
            .alias("latitude"),
            pl.when(pl.col("_i").is_in(verdict["_i"].implode()))
            .then(pl.col("_fix_lon"))
            .otherwise(pl.col("longitude"))
            .alias("longitude"),
        )
        .sort("_i")
        .drop("_i", "_fix_lat", "_fix_lon", "_why")
    )
    return out, repaired, dropped


def repair(places: pl.DataFrame) -> tuple[pl.DataFrame, RepairInfo]:
    """Both repairs, in order; the frame keeps its columns and rows."""
    places, restored = restore_postcodes(places)
    places, repaired, dropped = check_coordinates(places)
    return places, RepairInfo(restored, repaired, dropped)
