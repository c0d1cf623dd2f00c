"""Dedupe stage: give each place its place_key; the first row of a key is sent, the rest share it.

How the key is formed, and why it is conservative, is in `placeflow.pipeline.placekey`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from placeflow.pipeline.clusters import DedupeMode, clusters
from placeflow.pipeline.corekey import keys_and_cores
from placeflow.pipeline.placekey import identity_columns, place_key_expr, place_keys

__all__ = ["DedupeInfo", "dedupe", "identity_columns", "place_key_expr", "place_keys"]

SUBMITTED = "submitted"
DUPLICATE = "duplicate"


@dataclass(frozen=True)
class DedupeInfo:
    """places = unique + duplicates; unique is how many places will be sent; duplicates =
    exact (same place_key) + fuzzy (merged by the fuzzy pass)."""

    places: int
    unique: int
    duplicates: int
    exact_duplicates: int = 0
    fuzzy_duplicates: int = 0


def dedupe(
    places: pl.DataFrame,
    *,
    mode: DedupeMode = "exact",
    not_a_match: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, DedupeInfo]:
    """Add `place_key`, `core_key` (see `corekey`), `disposition` (submitted/duplicate) and
    `first_row_ord` (the row sent).

    Rows keep their order; running it again on its own output changes nothing. `mode`
    (`placeflow.pipeline.clusters`): fuzzy also merges the places the fuzzy pass matches
    (never a pair of `not_a_match`), off sends every row; the audit columns matched_row,
    match_rule and match_probability say what each duplicate matched.
    """
    first = pl.col("row_ord").min().over("place_key").alias("first_row_ord")
    keyed, fuzzy = clusters(
        places.with_columns(*keys_and_cores(places)), mode=mode, not_a_match=not_a_match
    )
    keyed = keyed.with_columns(first)
    submitted = pl.col("row_ord") == pl.col("first_row_ord")
    disposition = pl.when(submitted).then(pl.lit(SUBMITTED)).otherwise(pl.lit(DUPLICATE))
    keyed = keyed.select(
        pl.exclude("first_row_ord", "disposition"),
        disposition.alias("disposition"),
        "first_row_ord",
    )
    keyed = keyed.with_columns(_duplicate_note(keyed))
    unique = int((keyed.get_column("disposition") == SUBMITTED).sum())
    duplicates = keyed.height - unique
    info = DedupeInfo(keyed.height, unique, duplicates, duplicates - fuzzy, fuzzy)
    return keyed, info


def _duplicate_note(keyed: pl.DataFrame) -> pl.Expr:
    """A duplicate's note names the row it repeats ("duplicate of row 12 of a.csv"), before any
    note the row already had (a repair); other rows keep theirs."""
    present = "note" in keyed.columns
    old = pl.col("note") if present else pl.lit(None, pl.String)
    old = old.str.replace(r"^duplicate of row \d+ of [^;]*(; )?", "")  # once, when run again
    old = pl.when(old == "").then(None).otherwise(old)
    first = pl.col("row_ord") == pl.col("first_row_ord")
    where = pl.concat_str(
        pl.lit("duplicate of row "),
        pl.col("source_row").filter(first).first().over("place_key").cast(pl.String),
        pl.lit(" of "),
        pl.col("source_file").filter(first).first().over("place_key"),
    )
    joined = pl.concat_str(where, pl.concat_str(pl.lit("; "), old), ignore_nulls=True)
    return pl.when(pl.col("disposition") == DUPLICATE).then(joined).otherwise(old).alias("note")
