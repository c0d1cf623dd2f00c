"""Clusters of rows answered by one place: the exact place_key, then (mode `fuzzy`) the fuzzy
pass over the unique places (`placeflow.pipeline.match`) and the places already known in the
warehouse that share a block key with them (`placeflow.pipeline.known`), or (mode `off`) none
at all. A cluster that joined a known place is answered by it (its key is not a staged one).

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

from placeflow.fields import DEFAULT_MATCH_THRESHOLD
from placeflow.pipeline.known import KnownLookup, new_block_keys
from placeflow.pipeline.staging import Staging
from placeflow.state.records import MATCHED
from placeflow.store.warehouse import sql_text
from placeflow.support.arrow import scannable

EXACT = "exact"
AUDIT_COLUMNS = ("matched_row", "match_rule", "match_probability")
MATCH_FIELDS = ("place_key", "row_ord", "poi_name", "street", "address", "city", "region",
                "postcode", "country", "latitude", "longitude", "phone", "website", "source_file",
                "source_id")  # fmt: skip
"""What the fuzzy pass is handed of each unique place (those present; the columns named in
sql/prepare/dedupe_fuzzy_input.sql)."""

MATCH_BATCH_ROWS = 50_000
"""Unique places handed to the fuzzy pass at a time: polars' working memory for a batch's
features is what the pass holds beside its DuckDB (about 400 MB at 50,000, 700 MB at 200,000,
measured on 3M places)."""

PASSED = "pf_dedupe_passed"
"""What the fuzzy pass merged, as it hands it back (`placeflow.pipeline.match.OUTPUT_SCHEMA`,
the evidence as a level a comparison) and `matched_run_id`: MATCHES renders the evidence."""
REPEATED = "pf_dedupe_repeated"
"""Each exact place_key of more than one row: first_row_ord."""
MATCHES = "pf_dedupe_matches"
"""Each key the fuzzy pass merged: place_key, cluster_key, matched_key, match_rule,
match_probability, evidence, matched_run_id (the run that sent matched_key, when it is a place
already known in the warehouse). Kept past the stage as MATCHED (the run's run_matches)."""
KEYS = "pf_dedupe_keys"
"""Each exact place_key of REPEATED or MATCHES: own_first_row_ord, answer_key, merged_row,
merged_rule, merged_probability, and its cluster's first_row_ord, first_source_row,
first_source_file."""
WORK_TABLES = (PASSED, REPEATED, MATCHES, KEYS)
MATCHES_SCHEMA: dict[str, pl.DataType] = {
    "place_key": pl.String(),
    "cluster_key": pl.String(),
    "matched_key": pl.String(),
    "match_rule": pl.String(),
    "match_probability": pl.Float64(),
    "evidence": pl.String(),
    "matched_run_id": pl.String(),
}


def repeated_keys(staging: Staging) -> None:
    """REPEATED: the exact keys of more than one staged place, and their first rows."""
    staging.create(REPEATED, sql_text("prepare/dedupe_repeated"))


def cluster_keys(
    staging: Staging,
    *,
    fuzzy: bool,
    not_a_match: pl.DataFrame | None = None,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
    ids_may_repeat: bool = False,
    known: KnownLookup | None = None,
) -> int:
    """MATCHES (the fuzzy pass's merges when `fuzzy`, never a pair of `not_a_match`; else
    none), MATCHED (a copy the open stage keeps) and KEYS (after `repeated_keys`): the place
    answering each key of several rows or touched by a merge; how many keys the pass merged.
    `known` asks the warehouse for the places it already knows that share a block key with
    these (matched as well: a new place merged into one is answered by it)."""
    matched = _fuzzy(staging, not_a_match, threshold, ids_may_repeat, known) if fuzzy else None
    staging.drop(PASSED, MATCHES, MATCHED)
    if matched is None:
        staging.append(MATCHES, pl.DataFrame(schema=MATCHES_SCHEMA))
    else:
        _render(staging, matched)
    staging.create(MATCHED, f"select * from {MATCHES}")  # noqa: S608 - our table names
    staging.create(KEYS, sql_text("prepare/dedupe_keys"))
    return 0 if matched is None else matched.height


def _render(staging: Staging, matched: pl.DataFrame) -> None:
    """MATCHES from the pass's merges, the evidence rendered (each comparison's level label and
    match weight, JSON) in DuckDB: a few bytes a merge in polars, the text only in staging."""
    from placeflow.pipeline.match.model import evidence_json_sql  # loaded with the pass

    staging.append(PASSED, matched)
    columns = ", ".join(
        f"{evidence_json_sql('levels')} as evidence" if c == "evidence" else c
        for c in MATCHES_SCHEMA
    )
    staging.create(MATCHES, f"select {columns} from {PASSED}")  # noqa: S608 - our tables, our SQL
    staging.drop(PASSED)


def _fuzzy(
    staging: Staging,
    not_a_match: pl.DataFrame | None,
    threshold: float,
    ids_may_repeat: bool,
    known: KnownLookup | None,
) -> pl.DataFrame | None:
    """The fuzzy pass over the unique places, handed to it in batches after the known places
    that share a block key with them (None when there is nothing to match)."""
    firsts = sql_text("prepare/dedupe_fuzzy_input")
    unique = staging.count(f"({firsts})")
    known_places = known(new_block_keys(staging.con, firsts)) if known and unique else None
    exact: pl.Series = pl.Series("place_key", [], pl.String)
    if known_places is not None and known_places.height:
        exact = _exactly_known(staging, known_places)
        known_places = known_places.filter(~pl.col("place_key").is_in(exact.implode()))
    if unique + (0 if known_places is None else known_places.height) < 2:
        return None
    from placeflow.pipeline.match import fuzzy_match_batches  # Splink loads only when used

    # one batch is read whole (an Arrow reader is pyarrow's, 70 ms of a small run's import)
    few = unique <= MATCH_BATCH_ROWS
    read = [staging.query(firsts)] if few else staging.batches(firsts, MATCH_BATCH_ROWS)
    batches = (
        b.select(c for c in MATCH_FIELDS if c in b.columns).with_columns(
            pl.col("place_key").is_in(exact.implode()).alias("known")
        )
        for b in read
    )
    matched, _ = fuzzy_match_batches(
        batches, threshold=threshold, not_a_match=not_a_match, known=known_places,
        ids_may_repeat=ids_may_repeat,
    )  # fmt: skip
    runs = pl.DataFrame(schema={"matched_key": pl.String, "matched_run_id": pl.String})
    if known_places is not None:
        runs = known_places.select(
            pl.col("place_key").alias("matched_key"), pl.col("run_id").alias("matched_run_id")
        )
    return matched.join(runs, on="matched_key", how="left", maintain_order="left")


def _exactly_known(staging: Staging, known_places: pl.DataFrame) -> pl.Series:
    """The keys of the staged places that are known places themselves (the same exact key)."""
    staging.con.register("pf_known_found", scannable(known_places.select("place_key")))
    try:
        found = staging.query(
            "select distinct place_key from pf_staged_places"
            " semi join pf_known_found using (place_key)"
        )
    finally:
        staging.con.unregister("pf_known_found")
    return found.get_column("place_key")
