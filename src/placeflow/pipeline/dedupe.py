"""Dedupe stage: give each place its place_key; the first row of a key is sent, the rest share it.

How the key is formed, and why it is conservative, is in `placeflow.pipeline.placekey`; how
rows are clustered (exact, fuzzy, off) in `placeflow.pipeline.clusters`. The stage has two
halves: `keyed` adds each row's own keys to a batch of places before it is staged, and
`dedupe_staged` clusters the staged places in DuckDB (`placeflow.pipeline.staging`), so its
memory stays bounded whatever the input's size. `dedupe` runs both on a frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from placeflow.fields import DedupeMode
from placeflow.pipeline.clusters import AUDIT_COLUMNS, WORK_TABLES, cluster_keys, repeated_keys
from placeflow.pipeline.corekey import keys_and_cores
from placeflow.pipeline.placekey import identity_columns, place_key_expr, place_keys
from placeflow.pipeline.staging import Staging
from placeflow.state.records import DEDUPED, PLACES
from placeflow.warehouse import sql_text

__all__ = [
    "DedupeInfo",
    "dedupe",
    "dedupe_staged",
    "identity_columns",
    "keyed",
    "place_key_expr",
    "place_keys",
]

SUBMITTED = "submitted"
DUPLICATE = "duplicate"
ADDED = ("own_key", *AUDIT_COLUMNS, "disposition", "first_row_ord")
"""The columns dedupe adds after place_key and core_key (own_key: the row's own exact key)."""


@dataclass(frozen=True)
class DedupeInfo:
    """places = unique + duplicates; unique is how many places will be sent; duplicates =
    exact (same place_key) + fuzzy (merged by the fuzzy pass)."""

    places: int
    unique: int
    duplicates: int
    exact_duplicates: int = 0
    fuzzy_duplicates: int = 0


def keyed(places: pl.DataFrame) -> pl.DataFrame:
    """A normalised places batch with each row's own `place_key` and `core_key` (see
    `corekey`) set: what is staged in PLACES."""
    return places.with_columns(*keys_and_cores(places))


def dedupe_staged(
    staging: Staging,
    *,
    mode: DedupeMode = "exact",
    not_a_match: pl.DataFrame | None = None,
) -> DedupeInfo:
    """DEDUPED from the staged places (PLACES, dropped after): `place_key` set to the key of
    the place answering each row, the audit columns matched_row, match_rule and
    match_probability, `disposition` (submitted/duplicate) and `first_row_ord` (the row sent).

    `mode` (`placeflow.pipeline.clusters`): fuzzy also merges the places the fuzzy pass
    matches (never a pair of `not_a_match`), off sends every row. DEDUPED's rows are in no
    particular order: read them by row_ord.
    """
    repeated_keys(staging)
    fuzzy = 0
    if mode == "off":
        staging.create(DEDUPED, sql_text("prepare/dedupe_off"))
    else:
        fuzzy = cluster_keys(staging, fuzzy=mode == "fuzzy", not_a_match=not_a_match)
        staging.create(DEDUPED, sql_text("prepare/dedupe_rows"))
    staging.drop(*WORK_TABLES, PLACES)
    counted = staging.con.execute(
        f"select count(*), count(*) filter (disposition = '{SUBMITTED}') from {DEDUPED}"  # noqa: S608 - our table and disposition
    ).fetchall()
    places, unique = (int(n) for n in counted[0])
    duplicates = places - unique
    return DedupeInfo(places, unique, duplicates, duplicates - fuzzy, fuzzy)


def dedupe(
    places: pl.DataFrame,
    *,
    mode: DedupeMode = "exact",
    not_a_match: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, DedupeInfo]:
    """`dedupe_staged` on a frame: its rows keyed (`keyed`) and staged in a scratch database;
    the deduped rows come back in row_ord order, with the columns `dedupe_staged` adds after
    the frame's own (`place_key` and `core_key` among them, set anew).

    Running it again on its own output changes nothing: the columns it added are dropped, and
    the keys and notes made anew.
    """
    own = places.drop(ADDED, strict=False)
    has_note = "note" in own.columns
    if not has_note:
        own = own.with_columns(pl.lit(None, pl.String).alias("note"))
    with Staging.scratch() as staging, staging.limited():
        staging.append(PLACES, keyed(own))
        del own
        info = dedupe_staged(staging, mode=mode, not_a_match=not_a_match)
        out = staging.frame(DEDUPED)
    return (out if has_note else out.select(pl.exclude("note"), "note")), info
