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

from placeflow.fields import DEFAULT_MATCH_THRESHOLD, DedupeMode
from placeflow.pipeline.clusters import AUDIT_COLUMNS, WORK_TABLES, cluster_keys, repeated_keys
from placeflow.pipeline.corekey import keys_and_cores
from placeflow.pipeline.known import KnownLookup
from placeflow.pipeline.placekey import identity_columns, place_key_expr, place_keys
from placeflow.pipeline.staging import Staging
from placeflow.state.records import DEDUPED, MATCHED, PLACES
from placeflow.store.warehouse import sql_text

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
ADDED = (*AUDIT_COLUMNS, "disposition", "first_row_ord", "own_key")
"""The columns dedupe adds after place_key and core_key."""


@dataclass(frozen=True)
class DedupeInfo:
    """places = unique + duplicates; unique is how many places will be sent; duplicates =
    exact (same place_key) + fuzzy (merged by the fuzzy pass); known: places the fuzzy pass
    merged into places already known in the warehouse (looked up under those, not their own)."""

    places: int
    unique: int
    duplicates: int
    exact_duplicates: int = 0
    fuzzy_duplicates: int = 0
    known: int = 0


def keyed(places: pl.DataFrame, *, keys_given: bool = False) -> pl.DataFrame:
    """A normalised places batch with each row's own `place_key` and `core_key` (see
    `corekey`) set: what is staged in PLACES. With `keys_given` (a source of the warehouse's
    own places, `Source.keys_given`) a row's source_id is its place_key, kept as it is."""
    keys, cores = keys_and_cores(places)
    if keys_given:
        keys = places.get_column("source_id").fill_null(keys).rename("place_key")
    return places.with_columns(keys, cores)


def dedupe_staged(
    staging: Staging,
    *,
    mode: DedupeMode = "exact",
    not_a_match: pl.DataFrame | None = None,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
    ids_may_repeat: bool = False,
    known: KnownLookup | None = None,
) -> DedupeInfo:
    """DEDUPED from the staged places (PLACES, dropped after): `place_key` set to the key of
    the place answering each row, `own_key` the row's own, the audit columns matched_row,
    match_rule and match_probability, `disposition` (submitted/duplicate) and `first_row_ord`
    (the row sent); MATCHED the fuzzy pass's merges with their evidence.

    Rows with two different phones never share a place (sql/prepare/dedupe_phones.sql, the
    fuzzy pass's phone rule), nor rows of one file with different ids (dedupe_ids.sql, the id
    rule) unless `ids_may_repeat`. `mode` (`placeflow.pipeline.clusters`):
    fuzzy also merges the places the fuzzy pass matches at `threshold` (never a pair of
    `not_a_match`), among them and with the places `known` finds in the warehouse; off sends
    every row. DEDUPED's rows are in no particular order: read them by row_ord.
    """
    if mode != "off":
        if staging.has_column(PLACES, "phone"):
            staging.con.execute(sql_text("prepare/dedupe_phones"))
        if not ids_may_repeat:
            staging.con.execute(sql_text("prepare/dedupe_ids"))
    repeated_keys(staging)
    if mode == "off":
        staging.create(MATCHED, _NO_MATCHES)
        staging.create(DEDUPED, sql_text("prepare/dedupe_off"))
    else:
        cluster_keys(
            staging, fuzzy=mode == "fuzzy", not_a_match=not_a_match, threshold=threshold,
            ids_may_repeat=ids_may_repeat, known=known,
        )  # fmt: skip
        staging.create(DEDUPED, sql_text("prepare/dedupe_rows"))
    staging.drop(*WORK_TABLES, PLACES)
    counted = staging.con.execute(
        f"select count(*), count(*) filter (disposition = '{SUBMITTED}'),"  # noqa: S608 - our table and disposition
        " count(*) filter (disposition = 'duplicate' and match_rule = 'probabilistic'),"
        " count(*) filter (disposition = 'submitted' and match_rule = 'probabilistic')"
        f" from {DEDUPED}"
    ).fetchall()
    places, unique, fuzzy_rows, known_rows = (int(n) for n in counted[0])
    duplicates = places - unique
    return DedupeInfo(places, unique, duplicates, duplicates - fuzzy_rows, fuzzy_rows, known_rows)


_NO_MATCHES = (
    "select null::varchar as place_key, null::varchar as cluster_key, null::varchar as"
    " matched_key, null::varchar as match_rule, null::double as match_probability,"
    " null::varchar as evidence, null::varchar as matched_run_id where false"
)


def dedupe(
    places: pl.DataFrame,
    *,
    mode: DedupeMode = "exact",
    not_a_match: pl.DataFrame | None = None,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
    ids_may_repeat: bool = False,
    keys_given: bool = False,
) -> tuple[pl.DataFrame, DedupeInfo]:
    """`dedupe_staged` on a frame: its rows keyed (`keyed`, `keys_given` as there) and staged
    in a scratch database; the deduped rows come back in row_ord order, with the columns
    `dedupe_staged` adds after the frame's own (`place_key` and `core_key` among them, set
    anew).

    Running it again on its own output changes nothing: the columns it added are dropped, and
    the keys and notes made anew.
    """
    own = places.drop(ADDED, strict=False)
    has_note = "note" in own.columns
    if not has_note:
        own = own.with_columns(pl.lit(None, pl.String).alias("note"))
    with Staging.scratch() as staging, staging.limited():
        staging.append(PLACES, keyed(own, keys_given=keys_given))
        del own
        info = dedupe_staged(
            staging, mode=mode, not_a_match=not_a_match, threshold=threshold,
            ids_may_repeat=ids_may_repeat,
        )  # fmt: skip
        out = staging.frame(DEDUPED)
    return (out if has_note else out.select(pl.exclude("note"), "note")), info
