"""How far apart two records of one place lie, in the labelled directories: where the fuzzy
dedupe's distance vetoes come from (`placeflow.pipeline.match.model` FAR_KM and STORE_KM).

Every pair of records of bench/matching/directories/labelled.csv.gz that share an entity_id and
both have coordinates, with its great-circle distance; printed by kind of place (the set's
`category`) and by whether the two records come from one directory or two.

    .venv/bin/python bench/matching_distance.py
"""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
DIRECTORIES = ROOT / "bench" / "matching" / "directories" / "labelled.csv.gz"
EARTH_KM = 6371.0088


def same_place_pairs(path: Path = DIRECTORIES) -> pl.DataFrame:
    """Each pair of records of one place (entity_id) with coordinates on both: sources,
    categories, names, and the distance `km`."""
    with gzip.open(path, "rb") as f:
        records = pl.read_csv(f.read(), infer_schema_length=0)
    located = records.select(
        "record_id", "entity_id", "source", "category", "name",
        pl.col("latitude").cast(pl.Float64), pl.col("longitude").cast(pl.Float64),
    ).drop_nulls(["latitude", "longitude"])  # fmt: skip
    pairs = located.join(located, on="entity_id", suffix="_r").filter(
        pl.col("record_id") < pl.col("record_id_r")
    )
    lat1, lat2 = pl.col("latitude").radians(), pl.col("latitude_r").radians()
    dlat = lat2 - lat1
    dlon = (pl.col("longitude_r") - pl.col("longitude")).radians()
    a = (dlat / 2).sin() ** 2 + lat1.cos() * lat2.cos() * (dlon / 2).sin() ** 2
    km = 2 * EARTH_KM * a.sqrt().arcsin()
    return pairs.select(
        "source", "source_r", "category", "category_r", "name", "name_r", km.alias("km")
    )


def summary(pairs: pl.DataFrame) -> pl.DataFrame:
    """Pairs, median, 99th percentile and largest distance (m) by category and by whether the
    two records come from one directory."""
    return (
        pairs.with_columns((pl.col("source") == pl.col("source_r")).alias("one_directory"))
        .group_by("category", "one_directory")
        .agg(
            pl.len().alias("pairs"),
            (pl.col("km").median() * 1000).round(1).alias("median_m"),
            (pl.col("km").quantile(0.99) * 1000).round(0).alias("p99_m"),
            (pl.col("km").max() * 1000).round(0).alias("max_m"),
        )
        .sort("max_m")
    )


def main() -> None:
    from placeflow.pipeline.match.model import FAR_KM, STORE_KM

    pairs = same_place_pairs()
    with pl.Config(tbl_rows=-1, tbl_hide_dataframe_shape=True):
        print(summary(pairs))
        print(pairs.sort("km", descending=True).head(5))
    stores = pairs.filter(pl.col("category") == "store")
    beyond = pairs.filter(pl.col("km") > FAR_KM).height
    share = beyond / pairs.height
    print(f"pairs: {pairs.height:,}; beyond FAR_KM {FAR_KM} km: {beyond} ({share:.2%})")
    print(f"store pairs: {stores.height}; largest {stores['km'].max():.3f} km; STORE_KM {STORE_KM}")


if __name__ == "__main__":
    main()
