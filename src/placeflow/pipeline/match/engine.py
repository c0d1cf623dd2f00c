"""The fuzzy matching pass: score candidate pairs with Splink on DuckDB, cluster, audit.

Steps: features (`features`, a batch of places at a time, into the pass's own DuckDB, where
the blocks are capped and each name's count taken over all of them), candidate pairs from the
blocking rules (hard rules attached, see `model`), scored with the trained model; pairs at or
above the threshold whose names are alike, that break no rule of the evidence (`model.CONFLICT`,
`model.CHAIN_AGREES`) and that no one marked not-a-match become edges, each with its evidence
(every comparison's level, a digit each: `model.levels_sql`); Splink's connected components
make clusters, and a cluster holding a pair that may not be merged is rebuilt (`grouping`).
Only the edges' ids and probabilities come back into polars, and the merged places' keys and
evidence at the end.

Places already known in the warehouse (`known`) may be handed first: they join the pass as
places of their own, never matched with each other, so a new place matching one joins its
cluster, which that known place answers.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import duckdb
import polars as pl

from placeflow.fields import DEFAULT_MATCH_THRESHOLD
from placeflow.pipeline.match import tiny
from placeflow.pipeline.match.features import (
    BLOCKS,
    EVIDENCE,
    FEATURES,
    capped_blocks_sql,
    features,
)
from placeflow.pipeline.match.grouping import components, forbidden, merged_places, rebuild
from placeflow.pipeline.match.model import (
    CHAIN_AGREES,
    CHAIN_MIN,
    CONFLICT,
    EVIDENCE_COLUMNS,
    MARKS_MACRO,
    NAMES_ALIKE,
    blocked_pair_sql,
    levels_sql,
    settings,
)
from placeflow.support.arrow import fetched, scannable

__all__ = ["DEFAULT_THRESHOLD", "OUTPUT_SCHEMA", "RULE", "MatchInfo", "fuzzy_match",
           "fuzzy_match_batches"]  # fmt: skip

RULE = "probabilistic"
OUTPUT_SCHEMA = pl.Schema(
    {
        "place_key": pl.String,
        "cluster_key": pl.String,
        "matched_key": pl.String,
        "match_rule": pl.String,
        "match_probability": pl.Float64,
        "levels": pl.String,
    }
)
"""One row per merged place: its key, its cluster's representative's key, the key of the place
it matched most probably, the rule, that match's probability and its evidence as the level of
each comparison (`model.levels_sql`; `model.evidence_json_sql` renders it for a person)."""
DEFAULT_THRESHOLD = DEFAULT_MATCH_THRESHOLD
"""Match probability a pair needs to be merged (`--match-threshold`)."""
DUCKDB_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "threads": "2",
    "memory_limit": "512MB",
    "preserve_insertion_order": "false",
    "checkpoint_threshold": "1TB",
}
"""The pass's DuckDB: 2 threads (the target machine's cores); it holds the places, and beyond
memory_limit (about two million places, and the pairs' work) it spills to a temporary
directory of its own, removed after the pass; insertion order is not kept (edges are sorted
before use), which saves memory. No automatic checkpoint: an in-memory database checkpoints
(recompresses its tables) after every 16 MB written by default, which took a fifth of the
pass's time at 1M places and saved it no memory (its tables spill either way)."""
INPUT_COLUMNS = ("place_key", "poi_name", "street", "address", "city", "postcode", "country",
                 "latitude", "longitude", "phone", "website", "source_file", "source_id",
                 "known")  # fmt: skip
"""The columns of the places the pass reads (it copies no others)."""
SPLINK_COLUMNS = ["match_id", *FEATURES, *BLOCKS, *EVIDENCE]
"""What the pass keeps of each place: the id, the compared fields, the blocking keys and the
evidence (Splink reads those its rules and comparisons name)."""
PLACES_TABLE = "match_places"
"""The pass's places in its DuckDB: SPLINK_COLUMNS."""
CHAINS_TABLE = "match_chains"
"""The names (name_core) CHAIN_MIN places or more of the pass share: a chain's
(`model.CHAIN_AGREES`)."""
IDS_TABLE = "match_ids"
"""Each place's match_id (its position in order), place_key and whether it is known: the keys
stay here, and only the merged places' come back into polars."""
EDGES_TABLE = "match_edges"
"""The edges (match_id_l, match_id_r, match_probability, levels): the evidence stays here, and
only the merged places' comes back into polars (every edge's, held and copied by the
clustering, took 1.1 GB at 10M places; the merged places' as JSON, 360 MB)."""
NAMED_BATCH_ROWS = 100_000
"""The merged places are read back from DuckDB this many at a time (one result of 781,285 at
10M places, copied whole from DuckDB's result to Arrow to polars, was 170 MB at once)."""
MERGED_TABLE = "pf_match_merged"
"""The merged places handed back to DuckDB (`grouping.merged_places`: ids) to be named."""


@dataclass(frozen=True)
class MatchInfo:
    """Counts of the pass: `merged` places join a cluster answered by another place (of which
    `merged_known` one already known in the warehouse)."""

    places: int
    candidate_pairs: int
    matched_pairs: int
    not_a_match_pairs: int
    clusters: int
    merged: int
    rebuilt_clusters: int
    threshold: float
    known: int = 0
    merged_known: int = 0


def _connect(spill: str) -> duckdb.DuckDBPyConnection:
    """The pass's own in-memory DuckDB: bounded threads and memory, spilling into `spill`."""
    con = duckdb.connect(":memory:", config={**DUCKDB_CONFIG, "temp_directory": spill})
    con.execute(MARKS_MACRO)
    return con


def _features(batch: pl.DataFrame, first_id: int, ids_may_repeat: bool) -> pl.DataFrame:
    """A batch's features (SPLINK_COLUMNS and place_key), its places numbered from first_id."""
    own = batch.select(c for c in INPUT_COLUMNS if c in batch.columns)
    if ids_may_repeat:
        own = own.drop("source_id", strict=False)
    feats = features(own, first_id=first_id, capped=False)
    return feats.select(*SPLINK_COLUMNS, batch.get_column("place_key"))


def _insert(con: duckdb.DuckDBPyConnection, feats: pl.DataFrame, *, first: bool) -> None:
    """A batch's features into the raw places table (created by the first)."""
    con.register("pf_match_batch", scannable(feats))
    try:
        into = "create table pf_match_raw as" if first else "insert into pf_match_raw by name"
        con.execute(f"{into} select * from pf_match_batch")  # noqa: S608 - one of two fixed statements
    finally:
        con.unregister("pf_match_batch")


def _stage(
    con: duckdb.DuckDBPyConnection, batches: Iterable[pl.DataFrame], *, ids_may_repeat: bool
) -> int:
    """PLACES_TABLE (features, block keys capped over all places), CHAINS_TABLE (the names of
    CHAIN_MIN places or more) and IDS_TABLE (match_id, place_key, known) from the batches,
    numbered in their order; how many places there are. With `ids_may_repeat`, no place has
    an id (the id rule is off).

    A batch's features are computed on a thread of their own while DuckDB inserts the batch
    before (each releases the GIL): the two overlap, and two batches are held at most."""
    height, inserted = 0, 0
    pending: Future[pl.DataFrame] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="placeflow-match") as pool:
        for batch in batches:
            if batch.height == 0:
                continue
            computing = pool.submit(_features, batch, height, ids_may_repeat)
            height += batch.height
            if pending is not None:
                _insert(con, pending.result(), first=inserted == 0)
                inserted += 1
            pending = computing
        if pending is not None:
            _insert(con, pending.result(), first=inserted == 0)
    if height:
        ids = f"create table {IDS_TABLE} as select match_id, place_key, known from pf_match_raw"  # noqa: S608 - our table names
        con.execute(ids)
        capped = capped_blocks_sql("pf_match_raw")
        places = f"create table {PLACES_TABLE} as select * exclude (place_key) from ({capped})"  # noqa: S608 - our tables, our SQL
        con.execute(places)
        chains = (
            f"create table {CHAINS_TABLE} as select name_core from {PLACES_TABLE}"  # noqa: S608 - our tables, an int
            f" where name_core is not null group by name_core having count(*) >= {CHAIN_MIN}"
        )
        con.execute(chains)
        con.execute("drop table pf_match_raw")
    return height


EDGE_SCHEMA = pl.Schema(
    {"match_id_l": pl.Int64, "match_id_r": pl.Int64, "match_probability": pl.Float64}
)
SMALL_PASS = 1_000
"""Up to this many places a pass first asks DuckDB whether any two share a block under the
blocking rules (the rules' own SQL), and scores nothing, importing no Splink, when none do."""


def _any_candidate(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a pair of places meets a blocking rule (`model.blocking_rules`' SQL); True
    without asking past SMALL_PASS places, where the rules' join is Splink's to make."""
    (count,) = con.execute(f"select count(*) from {PLACES_TABLE}").fetchall()[0]  # noqa: S608 - our table
    met = int(count) > SMALL_PASS or con.execute(blocked_pair_sql(PLACES_TABLE)).fetchall()[0][0]
    return bool(met)


def _scored_edges(con: duckdb.DuckDBPyConnection, threshold: float) -> tuple[pl.DataFrame, int]:
    """(match_id_l, match_id_r, match_probability), in that order, of the pairs at or above
    threshold whose names are alike and that break no rule of the evidence (EDGES_TABLE holds
    them with their evidence); candidates.

    Splink reads PLACES_TABLE (the id, the columns its blocking rules and comparisons use) and
    keeps none of them in its output; the name test, the rules and the evidence run
    afterwards, on the few scored pairs joined back to the places.
    """
    if not _any_candidate(con):  # a handful of places none of whose blocks meet: no pair
        return pl.DataFrame(schema=EDGE_SCHEMA), 0
    from splink import DuckDBAPI, Linker  # loaded only when there are pairs to score

    db_api = DuckDBAPI(con)
    table = db_api.register(PLACES_TABLE)
    linker = Linker(table, settings(), log_level=None, validate_settings=False)
    blocked = linker.inference.compute_blocked_pairs_for_predict()
    count_sql = f"select count(*) from {blocked.physical_name}"  # noqa: S608 - Splink's table name
    candidates = int(con.execute(count_sql).fetchall()[0][0])
    scored = linker.inference.predict(threshold_match_probability=threshold, warning_mode="never")
    sides = ", ".join(f"l.{c} as {c}_l, r.{c} as {c}_r" for c in EVIDENCE_COLUMNS)
    con.execute(
        f"create or replace table {EDGES_TABLE} as select match_id_l, match_id_r,"  # noqa: S608 - Splink's and our tables, our rules
        f" match_probability, {levels_sql()} as levels"
        f" from (select p.match_id_l, p.match_id_r, p.match_probability, {sides}"
        f" from {scored.physical_name} p"
        f" join {PLACES_TABLE} l on l.match_id = p.match_id_l"
        f" join {PLACES_TABLE} r on r.match_id = p.match_id_r"
        f" where {NAMES_ALIKE} and {CHAIN_AGREES} and not ({CONFLICT}))"
    )
    for name in (scored.physical_name, blocked.physical_name):
        con.execute(f"drop table if exists {name}")
    # sorted in polars: DuckDB's sort of the pairs ran out of the pass's memory at 10M places
    sql = f"select match_id_l, match_id_r, match_probability from {EDGES_TABLE}"  # noqa: S608 - our table
    return fetched(con.sql(sql)).sort("match_id_l", "match_id_r"), candidates


def _named(con: duckdb.DuckDBPyConnection, merged: pl.DataFrame) -> pl.DataFrame:
    """The merged places (`merged_places`: ids, in match_id order) named by their keys
    (IDS_TABLE), with their pair's evidence (EDGES_TABLE), as OUTPUT_SCHEMA in that order,
    and `cluster_known` (the cluster's first place is known). A place already known is never
    merged (its cluster is answered by it or by another known place, never re-sent): left out."""
    con.register(MERGED_TABLE, scannable(merged))
    try:
        sql = (
            "select x.match_id, p.place_key, c.place_key as cluster_key,"  # noqa: S608 - our tables
            f" m.place_key as matched_key, '{RULE}' as match_rule, x.match_probability,"
            f" e.levels, c.known as cluster_known from {MERGED_TABLE} x"
            f" join {IDS_TABLE} p on p.match_id = x.match_id"
            f" join {IDS_TABLE} c on c.match_id = x.cluster"
            f" join {IDS_TABLE} m on m.match_id = x.matched_id"
            f" left join {EDGES_TABLE} e on least(x.match_id, x.matched_id)"
            " = least(e.match_id_l, e.match_id_r)"
            " and greatest(x.match_id, x.matched_id) = greatest(e.match_id_l, e.match_id_r)"
            " where not p.known order by x.match_id"
        )
        reader = con.sql(sql).to_arrow_reader(NAMED_BATCH_ROWS)
        read = [pl.DataFrame(b) for b in reader] or [pl.DataFrame(reader.schema.empty_table())]
        found = pl.concat(read, rechunk=False)
    finally:
        con.unregister(MERGED_TABLE)
    schema = pl.Schema([*OUTPUT_SCHEMA.items(), ("cluster_known", pl.Boolean())])
    return found.select(schema.names()).cast(schema)


def _apart_ids(con: duckdb.DuckDBPyConnection, not_a_match: pl.DataFrame | None) -> pl.DataFrame:
    """The not-a-match pairs as (a, b) match ids (IDS_TABLE), both orders."""
    schema = pl.Schema({"a": pl.Int64, "b": pl.Int64})
    if not_a_match is None or not_a_match.height == 0:
        return pl.DataFrame(schema=schema)
    con.register("pf_not_a_match", scannable(not_a_match.select("place_key_a", "place_key_b")))
    try:
        sql = (
            "select ia.match_id as a, ib.match_id as b from pf_not_a_match n"  # noqa: S608 - our table names
            f" join {IDS_TABLE} ia on ia.place_key = n.place_key_a"
            f" join {IDS_TABLE} ib on ib.place_key = n.place_key_b"
        )
        one = fetched(con.sql(sql))
    finally:
        con.unregister("pf_not_a_match")
    both = pl.concat(
        [one.select("a", "b"), one.select(pl.col("b").alias("a"), pl.col("a").alias("b"))]
    )
    return both.unique().cast(schema)


def fuzzy_match(
    places: pl.DataFrame,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    not_a_match: pl.DataFrame | None = None,
    order_by: str = "row_ord",
    known: pl.DataFrame | None = None,
    ids_may_repeat: bool = False,
) -> tuple[pl.DataFrame, MatchInfo]:
    """Places (one per exact place_key) that join another's cluster: see the module docstring.

    `places` has `place_key`, the normalised place fields, optionally `phone`, `website`,
    `source_file` and `source_id` (the id rule), and `order_by` (default `row_ord`, the first
    row of the key; if absent, frame order). The result (OUTPUT_SCHEMA) has one row per merged
    place, in `order_by` order. `not_a_match` has place_key_a, place_key_b: those two places
    never share a cluster. `known`: places already known (the same columns), staged first.
    """
    order = (
        places.get_column(order_by) if order_by in places.columns
        else pl.int_range(places.height, eager=True)
    )  # fmt: skip
    used = [c for c in INPUT_COLUMNS if c in places.columns]
    ranked = places.select(used).with_columns(order.alias("_order"))
    ranked = ranked.sort("_order", maintain_order=True).drop("_order")
    return fuzzy_match_batches(
        [ranked], threshold=threshold, not_a_match=not_a_match, known=known,
        ids_may_repeat=ids_may_repeat,
    )  # fmt: skip


def _with_known(
    batches: Iterable[pl.DataFrame], known: pl.DataFrame | None
) -> Iterator[pl.DataFrame]:
    """The known places (flagged) first, then the batches (flagged not known)."""
    if known is not None and known.height:
        yield known.with_columns(pl.lit(True).alias("known"))
    for batch in batches:
        yield batch.with_columns(pl.lit(False).alias("known"))


def fuzzy_match_batches(
    batches: Iterable[pl.DataFrame],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    not_a_match: pl.DataFrame | None = None,
    known: pl.DataFrame | None = None,
    ids_may_repeat: bool = False,
) -> tuple[pl.DataFrame, MatchInfo]:
    """`fuzzy_match` over places handed in batches, already in order (the first place of a
    cluster answers it; the result is in that order too), after the `known` places.

    Each batch's features go into the pass's own DuckDB and are let go: the places are held
    there (spilling to disk past its memory limit), and only the scored edges and the places
    on them come back into polars, so the pass's memory is bounded whatever the places' count.
    """
    known_count = 0 if known is None else known.height
    places, few = tiny.held(_with_known(batches, known))
    if few is not None and not tiny.may_pair(few):  # no two could pair: no DuckDB, no score
        info = MatchInfo(sum(b.height for b in few), 0, 0, 0, 0, 0, 0, threshold, known_count)
        return pl.DataFrame(schema=OUTPUT_SCHEMA), info
    with tempfile.TemporaryDirectory(prefix="placeflow-match-") as spill:
        con = _connect(spill)
        try:
            height = _stage(con, places, ids_may_repeat=ids_may_repeat)
            if height - known_count < 1 or height < 2:
                info = MatchInfo(height, 0, 0, 0, 0, 0, 0, threshold, known_count)
                return pl.DataFrame(schema=OUTPUT_SCHEMA), info
            edges, candidates = _scored_edges(con, threshold)
            apart = _apart_ids(con, not_a_match)
            return _clustered(con, height, edges, apart, candidates, threshold, known_count)
        finally:
            con.close()


def _clustered(
    con: duckdb.DuckDBPyConnection,
    height: int,
    edges: pl.DataFrame,
    apart: pl.DataFrame,
    candidates: int,
    threshold: float,
    known: int,
) -> tuple[pl.DataFrame, MatchInfo]:
    """The scored edges (less the not-a-match pairs) into clusters, and each member's match."""
    pair = pl.col("match_id_l").alias("a"), pl.col("match_id_r").alias("b")
    refused = edges.select(*pair).join(apart, on=["a", "b"], how="semi").height
    edges = edges.join(apart.rename({"a": "match_id_l", "b": "match_id_r"}),
                       on=["match_id_l", "match_id_r"], how="anti")  # fmt: skip
    if edges.height == 0:
        info = MatchInfo(height, candidates, 0, refused, 0, 0, 0, threshold, known)
        return pl.DataFrame(schema=OUTPUT_SCHEMA), info
    clusters = components(con, edges, threshold)
    clusters, rebuilt = rebuild(clusters, edges, forbidden(con, clusters, PLACES_TABLE, apart))
    named = _named(con, merged_places(clusters, edges))
    result = named.drop("cluster_known")
    info = MatchInfo(
        places=height,
        candidate_pairs=candidates,
        matched_pairs=edges.height,
        not_a_match_pairs=refused,
        clusters=clusters.filter(pl.len().over("cluster") > 1).get_column("cluster").n_unique(),
        merged=result.height,
        rebuilt_clusters=rebuilt,
        threshold=threshold,
        known=known,
        merged_known=int(named.get_column("cluster_known").sum()),
    )
    return result, info
