"""Dedupe stage: give each place its place_key; the first row of a key is sent, the rest share it.

How the key is formed, and why it is conservative, is in `placeflow.pipeline.placekey`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from placeflow.pipeline.placekey import identity_columns, place_key_expr, place_keys

__all__ = ["DedupeInfo", "dedupe", "identity_columns", "place_key_expr", "place_keys"]

SUBMITTED = "submitted"
DUPLICATE = "duplicate"


@dataclass(frozen=True)
class DedupeInfo:
    """places = unique + duplicates; unique is how many places will be sent."""

    places: int
    unique: int
    duplicates: int


def dedupe(places: pl.DataFrame) -> tuple[pl.DataFrame, DedupeInfo]:
    """Add `place_key`, `disposition` (submitted/duplicate) and `first_row_ord` (the row sent).

    Rows keep their order; running it again on its own output changes nothing.
    """
    first = pl.col("row_ord").min().over("place_key").alias("first_row_ord")
    keyed = places.with_columns(place_keys(places)).with_columns(first)
    submitted = pl.col("row_ord") == pl.col("first_row_ord")
    disposition = pl.when(submitted).then(pl.lit(SUBMITTED)).otherwise(pl.lit(DUPLICATE))
    keyed = keyed.select(
        pl.exclude("first_row_ord", "disposition"),
        disposition.alias("disposition"),
        "first_row_ord",
    )
    unique = int((keyed.get_column("disposition") == SUBMITTED).sum())
    return keyed, DedupeInfo(places=keyed.height, unique=unique, duplicates=keyed.height - unique)
