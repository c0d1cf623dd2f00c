"""Clusters of rows answered by one place: the exact place_key, then (mode `fuzzy`) the fuzzy
pass over the unique places (`placeflow.pipeline.match`), or (mode `off`) none at all.

Every row ends with `place_key` set to the key of the place that answers it (the cluster's
representative), so `run_rows` joined to `places_latest` on `place_key` gives each row its
answer. Each duplicate records the row it matched (`matched_row`), by which rule
(`match_rule`: exact or probabilistic) and with what probability (`match_probability`, 1 for
exact): an exact repeat matched the first row of its own key; the first row of a place the
fuzzy pass merged matched the first row of the place it matched most probably.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

DedupeMode = Literal["exact", "fuzzy", "off"]
EXACT = "exact"
AUDIT_COLUMNS = ("matched_row", "match_rule", "match_probability")
MATCH_FIELDS = ("place_key", "row_ord", "poi_name", "street", "address", "city", "region",
                "postcode", "country", "latitude", "longitude", "phone", "website")  # fmt: skip
"""What the fuzzy pass is handed of each unique place (those present)."""


def clusters(
    keyed: pl.DataFrame,
    *,
    mode: DedupeMode = "exact",
    not_a_match: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, int]:
    """`keyed` (each row's own exact `place_key`, `row_ord`) with `place_key` set to the key
    of the place answering the row and the audit columns added; and how many places the fuzzy
    pass merged into another's cluster. Row order is kept."""
    keyed = keyed.drop(AUDIT_COLUMNS, strict=False)  # when run again on its own output
    own_first = pl.col("row_ord").min().over("place_key")
    if mode == "off":  # every row its own place: a repeat's key gets its occurrence number
        nth = pl.col("row_ord").rank("ordinal").over("place_key")
        key = pl.when(nth > 1).then(pl.format("{}-{}", "place_key", nth)).otherwise("place_key")
        return keyed.with_columns(key.alias("place_key"), *_no_audit()), 0
    keyed = keyed.with_columns(own_first.alias("_own_first"))
    firsts = keyed.filter(pl.col("row_ord") == pl.col("_own_first"))
    matched = _fuzzy(firsts, not_a_match) if mode == "fuzzy" else None
    repeat = pl.col("row_ord") != pl.col("_own_first")
    if matched is None or matched.height == 0:
        audited = keyed.with_columns(
            pl.when(repeat).then(pl.col("_own_first")).alias("matched_row"),
            pl.when(repeat).then(pl.lit(EXACT)).alias("match_rule"),
            pl.when(repeat).then(pl.lit(1.0)).alias("match_probability"),
        )
        return audited.drop("_own_first"), 0
    first_of = firsts.select(
        pl.col("place_key").alias("matched_key"), pl.col("row_ord").alias("_m")
    )
    matched = matched.join(first_of, on="matched_key", how="left").select(
        "place_key", "cluster_key", "_m", pl.col("match_probability").alias("_p"), "match_rule"
    )
    joined = keyed.join(matched, on="place_key", how="left", maintain_order="left")
    merged = pl.col("cluster_key").is_not_null() & ~repeat
    audited = joined.with_columns(
        pl.when(repeat).then(pl.col("_own_first")).when(merged).then(pl.col("_m"))
        .alias("matched_row"),
        pl.when(repeat).then(pl.lit(EXACT)).when(merged).then(pl.col("match_rule"))
        .alias("match_rule"),
        pl.when(repeat).then(pl.lit(1.0)).when(merged).then(pl.col("_p"))
        .alias("match_probability"),
        pl.coalesce("cluster_key", "place_key").alias("place_key"),
    )  # fmt: skip
    return audited.drop("_own_first", "_m", "_p", "cluster_key"), matched.height


def _no_audit() -> list[pl.Expr]:
    return [
        pl.lit(None, pl.Int64).alias("matched_row"),
        pl.lit(None, pl.String).alias("match_rule"),
        pl.lit(None, pl.Float64).alias("match_probability"),
    ]


def _fuzzy(firsts: pl.DataFrame, not_a_match: pl.DataFrame | None) -> pl.DataFrame | None:
    """The fuzzy pass over the unique places (None when there are fewer than two)."""
    if firsts.height < 2:
        return None
    from placeflow.pipeline.match import fuzzy_match  # Splink loads only when it is used

    matched, _ = fuzzy_match(
        firsts.select(c for c in MATCH_FIELDS if c in firsts.columns), not_a_match=not_a_match
    )
    return matched
