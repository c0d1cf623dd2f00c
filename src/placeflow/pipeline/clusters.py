"""Clusters of rows answered by one place: the exact place_key, then (mode `fuzzy`) the fuzzy
pass over the unique places (`placeflow.pipeline.match`), or (mode `off`) none at all.

Every row ends with `place_key` set to the key of the place that answers it (the cluster's
representative), so `run_rows` joined to `places_latest` on `place_key` gives each row its
answer. Each duplicate records the row it matched (`matched_row`), by which rule
(`match_rule`: exact or probabilistic) and with what probability (`match_probability`, 1 for
exact): an exact repeat matched the first row of its own key; the first row of a place the
fuzzy pass merged matched the first row of the place it matched most probably.

The work is done on the staged places in DuckDB (`placeflow.pipeline.staging`), by grouping
and joining, so that its memory stays bounded: REPEATED holds the exact keys of more than one
row, MATCHES what the fuzzy pass merged (it is handed the unique places in batches and holds
them in its own DuckDB), KEYS the answering place and cluster's first row of each key in either
(every other key is one row, sent as its own place).
"""

from __future__ import annotations

import polars as pl

from placeflow.pipeline.staging import Staging
from placeflow.warehouse import sql_text

EXACT = "exact"
AUDIT_COLUMNS = ("matched_row", "match_rule", "match_probability")
MATCH_FIELDS = ("place_key", "row_ord", "poi_name", "street", "address", "city", "region",
                "postcode", "country", "latitude", "longitude", "phone", "website")  # fmt: skip
"""What the fuzzy pass is handed of each unique place (those present; the columns named in
sql/prepare/dedupe_fuzzy_input.sql)."""

MATCH_BATCH_ROWS = 50_000
"""Unique places handed to the fuzzy pass at a time: polars' working memory for a batch's
features is what the pass holds beside its DuckDB (about 400 MB at 50,000, 700 MB at 200,000,
measured on 3M places)."""

REPEATED = "pf_dedupe_repeated"
"""Each exact place_key of more than one row: first_row_ord."""
MATCHES = "pf_dedupe_matches"
"""Each key the fuzzy pass merged: place_key, cluster_key, matched_key, match_rule,
match_probability."""
KEYS = "pf_dedupe_keys"
"""Each exact place_key of REPEATED or MATCHES: own_first_row_ord, answer_key, merged_row,
merged_rule, merged_probability, and its cluster's first_row_ord, first_source_row,
first_source_file."""
WORK_TABLES = (REPEATED, MATCHES, KEYS)
MATCHES_SCHEMA: dict[str, pl.DataType] = {
    "place_key": pl.String(),
    "cluster_key": pl.String(),
    "matched_key": pl.String(),
    "match_rule": pl.String(),
    "match_probability": pl.Float64(),
}


def repeated_keys(staging: Staging) -> None:
    """REPEATED: the exact keys of more than one staged place, and their first rows."""
    staging.create(REPEATED, sql_text("prepare/dedupe_repeated"))


def cluster_keys(staging: Staging, *, fuzzy: bool, not_a_match: pl.DataFrame | None = None) -> int:
    """MATCHES (the fuzzy pass's merges when `fuzzy`, never a pair of `not_a_match`; else
    none) and KEYS (after `repeated_keys`): the place answering each key of several rows or
    touched by a merge; how many keys the pass merged."""
    matched = _fuzzy(staging, not_a_match) if fuzzy else None
    if matched is None:
        matched = pl.DataFrame(schema=MATCHES_SCHEMA)
    staging.drop(MATCHES)
    staging.append(MATCHES, matched.select(pl.col(c).cast(t) for c, t in MATCHES_SCHEMA.items()))
    staging.create(KEYS, sql_text("prepare/dedupe_keys"))
    return matched.height


def _fuzzy(staging: Staging, not_a_match: pl.DataFrame | None) -> pl.DataFrame | None:
    """The fuzzy pass over the unique places, handed to it in batches (None when there are
    fewer than two)."""
    firsts = sql_text("prepare/dedupe_fuzzy_input")
    if staging.count(f"({firsts})") < 2:
        return None
    from placeflow.pipeline.match import fuzzy_match_batches  # Splink loads only when used

    read = staging.batches(firsts, MATCH_BATCH_ROWS)
    batches = (b.select(c for c in MATCH_FIELDS if c in b.columns) for b in read)
    matched, _ = fuzzy_match_batches(batches, not_a_match=not_a_match)
    return matched
