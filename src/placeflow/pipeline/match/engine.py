"""The fuzzy matching pass: score candidate pairs with Splink on DuckDB, cluster, audit.

Steps: features (`features`, a batch of places at a time, into the pass's own DuckDB, where
the blocks are capped over all of them), candidate pairs from the blocking rules (hard rules
attached, see `model`), scored with the trained model; pairs at or above the threshold that no
one marked not-a-match become edges; Splink's connected components make clusters. A cluster
that chains places which may not be merged with each other (A~B and B~C, but A and C differ in
street number, country, or lie far apart, or were marked not-a-match) is rebuilt from its
edges, the most probable first, joining two groups only when every pair across them is
allowed. Only the edges and the places on them come back into polars.

Each cluster is answered by its first place (the lowest `order_by`); every other member is
returned with that representative, the place it matched most probably within the cluster, and
that match's probability.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb
import polars as pl
from splink import DuckDBAPI, Linker
from splink.clustering import cluster_pairwise_predictions_at_threshold

from placeflow.pipeline.match.features import BLOCKS, FEATURES, capped_blocks_sql, features
from placeflow.pipeline.match.model import FAR_KM, NAMES_ALIKE, settings

DEFAULT_THRESHOLD = 0.99
"""Match probability a pair needs to be merged (precision first; see bench/RESULTS.md)."""
RULE = "probabilistic"
DUCKDB_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "threads": "2",
    "memory_limit": "512MB",
    "preserve_insertion_order": "false",
}
"""The pass's DuckDB: 2 threads (the target machine's cores); it holds the places, and beyond
memory_limit (about two million places, and the pairs' work) it spills to a temporary
directory of its own, removed after the pass; insertion order is not kept (edges are sorted
before use), which saves memory."""
INPUT_COLUMNS = ("place_key", "poi_name", "street", "address", "city", "postcode", "country",
                 "latitude", "longitude", "phone", "website")  # fmt: skip
"""The columns of the places the pass reads (it copies no others)."""
SPLINK_COLUMNS = ["match_id", *FEATURES, *BLOCKS]
"""What Splink is handed: the id, the compared fields and the blocking keys."""
PLACES_TABLE = "match_places"
"""The pass's places in its DuckDB: SPLINK_COLUMNS."""
IDS_TABLE = "match_ids"
"""Each place's match_id (its position in order) and place_key."""
OUTPUT_SCHEMA = pl.Schema(
    {
        "place_key": pl.String,
        "cluster_key": pl.String,
        "matched_key": pl.String,
        "match_rule": pl.String,
        "match_probability": pl.Float64,
    }
)


@dataclass(frozen=True)
class MatchInfo:
    """Counts of the pass: `merged` places join a cluster answered by another place."""

    places: int
    candidate_pairs: int
    matched_pairs: int
    not_a_match_pairs: int
    clusters: int
    merged: int
    rebuilt_clusters: int
    threshold: float


def _connect(spill: str) -> duckdb.DuckDBPyConnection:
    """The pass's own in-memory DuckDB: bounded threads and memory, spilling into `spill`."""
    return duckdb.connect(":memory:", config={**DUCKDB_CONFIG, "temp_directory": spill})


def _stage(con: duckdb.DuckDBPyConnection, batches: Iterable[pl.DataFrame]) -> int:
    """PLACES_TABLE (features, block keys capped over all places) and IDS_TABLE (match_id,
    place_key) from the batches, numbered in their order; how many places there are."""
    height = 0
    for batch in batches:
        if batch.height == 0:
            continue
        used = [c for c in INPUT_COLUMNS if c in batch.columns]
        feats = features(batch.select(used), first_id=height, capped=False)
        feats = feats.select(*SPLINK_COLUMNS, batch.get_column("place_key"))
        con.register("pf_match_batch", feats.to_arrow(compat_level=pl.CompatLevel.newest()))
        try:
            into = "insert into pf_match_raw by name" if height else "create table pf_match_raw as"
            con.execute(f"{into} select * from pf_match_batch")  # noqa: S608 - one of two fixed statements
        finally:
            con.unregister("pf_match_batch")
        height += batch.height
        del feats
    if height:
        ids = f"create table {IDS_TABLE} as select match_id, place_key from pf_match_raw"  # noqa: S608 - our table names
        con.execute(ids)
        capped = capped_blocks_sql("pf_match_raw")
        places = f"create table {PLACES_TABLE} as select * exclude (place_key) from ({capped})"  # noqa: S608 - our tables, our SQL
        con.execute(places)
        con.execute("drop table pf_match_raw")
    return height


def _scored_edges(con: duckdb.DuckDBPyConnection, threshold: float) -> tuple[pl.DataFrame, int]:
    """(match_id_l, match_id_r, match_probability) of pairs at or above threshold; candidates.

    Splink reads PLACES_TABLE (the id, the columns its blocking rules and comparisons use) and
    keeps none of them in its output (so its settings are not re-parsed per call); the name
    test runs afterwards, on the few scored pairs joined back to the places.
    """
    db_api = DuckDBAPI(con)
    table = db_api.register(PLACES_TABLE)
    linker = Linker(table, settings(), log_level=None, validate_settings=False)
    blocked = linker.inference.compute_blocked_pairs_for_predict()
    count_sql = f"select count(*) from {blocked.physical_name}"  # noqa: S608 - Splink's table name
    candidates = int(con.execute(count_sql).fetchall()[0][0])
    scored = linker.inference.predict(threshold_match_probability=threshold, warning_mode="never")
    sql = (
        "select p.match_id_l, p.match_id_r, p.match_probability"  # noqa: S608 - Splink's and our tables, our test
        f" from {scored.physical_name} p"
        f" join {PLACES_TABLE} l on l.match_id = p.match_id_l"
        f" join {PLACES_TABLE} r on r.match_id = p.match_id_r"
        f" where {NAMES_ALIKE} order by all"
    )
    edges: pl.DataFrame = con.sql(sql).pl()
    for name in (scored.physical_name, blocked.physical_name):
        con.execute(f"drop table if exists {name}")
    return edges, candidates


def _of(con: duckdb.DuckDBPyConnection, table: str, columns: str, ids: pl.Series) -> pl.DataFrame:
    """`columns` of `table`'s rows whose match_id is among `ids` (the few places on edges)."""
    con.register("pf_match_wanted", ids.unique().rename("match_id").to_frame().to_arrow())
    try:
        sql = f"select {columns} from {table} semi join pf_match_wanted using (match_id)"  # noqa: S608 - our tables and columns
        out: pl.DataFrame = con.sql(sql).pl()
    finally:
        con.unregister("pf_match_wanted")
    return out


def _components(
    con: duckdb.DuckDBPyConnection, edges: pl.DataFrame, threshold: float
) -> pl.DataFrame:
    """(match_id, cluster_id) of every place on an edge, by Splink's connected components."""
    ends = pl.concat([edges.get_column("match_id_l"), edges.get_column("match_id_r")])
    nodes = ends.unique().sort().rename("match_id").to_frame()
    cc = cluster_pairwise_predictions_at_threshold(
        nodes.to_arrow(),
        edges.to_arrow(),
        db_api=DuckDBAPI(con),
        node_id_column_name="match_id",
        threshold_match_probability=threshold,
    )
    sql = f"select match_id, cluster_id from {cc.physical_name}"  # noqa: S608 - Splink's table name
    out: pl.DataFrame = con.sql(sql).pl()
    # cluster ids named by their smallest member (stable, and independent of Splink's naming)
    return out.select("match_id", pl.col("match_id").min().over("cluster_id").alias("cluster"))


def _km(a: tuple[float, float], b: tuple[float, float]) -> float:
    dy = (a[0] - b[0]) * 110.57
    dx = (a[1] - b[1]) * 111.32 * math.cos(math.radians(a[0]))
    return math.hypot(dx, dy)


class _Groups:
    """Union of places into groups that stay free of pairs which may not be merged."""

    def __init__(self, rows: dict[int, dict[str, Any]], apart: set[tuple[int, int]]):
        self.root = {i: i for i in rows}
        self.members = {i: [i] for i in rows}
        self.rows = rows
        self.apart = apart

    def _allowed(self, a: list[int], b: list[int]) -> bool:
        for i in a:
            x = self.rows[i]
            for j in b:
                y = self.rows[j]
                if (min(i, j), max(i, j)) in self.apart:
                    return False
                for field in ("street_number", "country"):
                    if x[field] is not None and y[field] is not None and x[field] != y[field]:
                        return False
                if x["latitude"] is not None and y["latitude"] is not None:
                    here = (x["latitude"], x["longitude"])
                    if _km(here, (y["latitude"], y["longitude"])) > FAR_KM:
                        return False
        return True

    def join(self, i: int, j: int) -> None:
        ri, rj = self.root[i], self.root[j]
        if ri == rj or not self._allowed(self.members[ri], self.members[rj]):
            return
        keep, gone = min(ri, rj), max(ri, rj)
        moved = self.members.pop(gone)
        for m in moved:
            self.root[m] = keep
        self.members[keep].extend(moved)


def _conflicted(clusters: pl.DataFrame, feats: pl.DataFrame, apart: pl.DataFrame) -> pl.Series:
    """Clusters holding a pair that may not be merged (so their edges are replayed)."""
    members = clusters.join(feats, on="match_id")
    lat = pl.col("latitude")
    spread = ((lat.max() - lat.min()) * 110.57) ** 2 + (
        (pl.col("longitude").max() - pl.col("longitude").min())
        * 111.32
        * (lat.mean() * math.pi / 180).cos()
    ) ** 2
    per_cluster = members.group_by("cluster").agg(
        (
            (pl.col("street_number").drop_nulls().n_unique() > 1)
            | (pl.col("country").drop_nulls().n_unique() > 1)
            | (spread.fill_null(0.0) > FAR_KM * FAR_KM)
        ).alias("bad")
    )
    bad = per_cluster.filter(pl.col("bad")).get_column("cluster")
    split = (
        apart.join(clusters.rename({"match_id": "a"}), on="a")
        .join(clusters.rename({"match_id": "b", "cluster": "cluster_b"}), on="b")
        .filter(pl.col("cluster") == pl.col("cluster_b"))
        .get_column("cluster")
    )
    return pl.concat([bad, split]).unique()


def _rebuild(
    clusters: pl.DataFrame, edges: pl.DataFrame, feats: pl.DataFrame, apart: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """Clusters with conflicts rebuilt edge by edge, most probable first (few clusters)."""
    bad = _conflicted(clusters, feats, apart)
    if bad.len() == 0:
        return clusters, 0
    ids = clusters.filter(pl.col("cluster").is_in(bad.implode())).get_column("match_id")
    cols = ["match_id", "street_number", "country", "latitude", "longitude"]
    rows = {r["match_id"]: r for r in feats.filter(pl.col("match_id").is_in(ids.implode()))
            .select(cols).iter_rows(named=True)}  # fmt: skip
    pairs = apart.filter(pl.col("a").is_in(ids.implode()))
    groups = _Groups(rows, {(min(a, b), max(a, b)) for a, b in pairs.iter_rows()})
    replay = edges.filter(pl.col("match_id_l").is_in(ids.implode())).sort(
        ["match_probability", "match_id_l", "match_id_r"], descending=[True, False, False]
    )
    for left, right, _ in replay.iter_rows():
        groups.join(left, right)
    rebuilt = pl.DataFrame(
        {"match_id": list(groups.root), "cluster": list(groups.root.values())},
        schema={"match_id": pl.Int64, "cluster": pl.Int64},
    )
    kept = clusters.filter(~pl.col("cluster").is_in(bad.implode()))
    return pl.concat([kept, rebuilt]), bad.len()


def _apart_ids(con: duckdb.DuckDBPyConnection, not_a_match: pl.DataFrame | None) -> pl.DataFrame:
    """The not-a-match pairs as (a, b) match ids (IDS_TABLE), both orders."""
    schema = pl.Schema({"a": pl.Int64, "b": pl.Int64})
    if not_a_match is None or not_a_match.height == 0:
        return pl.DataFrame(schema=schema)
    pairs = not_a_match.select("place_key_a", "place_key_b")
    con.register("pf_not_a_match", pairs.to_arrow())
    try:
        one: pl.DataFrame = con.sql(
            "select ia.match_id as a, ib.match_id as b from pf_not_a_match n"  # noqa: S608 - our table names
            f" join {IDS_TABLE} ia on ia.place_key = n.place_key_a"
            f" join {IDS_TABLE} ib on ib.place_key = n.place_key_b"
        ).pl()
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
) -> tuple[pl.DataFrame, MatchInfo]:
    """Places (one per exact place_key) that join another's cluster: see the module docstring.

    `places` has `place_key`, the normalised place fields, optionally `phone` and `website`,
    and `order_by` (default `row_ord`, the first row of the key; if absent, frame order). The
    result has one row per merged place: place_key, cluster_key (the representative's key),
    matched_key, match_rule ("probabilistic") and match_probability, in `order_by` order.
    `not_a_match` has place_key_a, place_key_b: those two places never share a cluster.
    """
    order = (
        places.get_column(order_by) if order_by in places.columns
        else pl.int_range(places.height, eager=True)
    )  # fmt: skip
    used = [c for c in INPUT_COLUMNS if c in places.columns]
    ranked = places.select(used).with_columns(order.alias("_order"))
    ranked = ranked.sort("_order", maintain_order=True).drop("_order")
    return fuzzy_match_batches([ranked], threshold=threshold, not_a_match=not_a_match)


def fuzzy_match_batches(
    batches: Iterable[pl.DataFrame],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    not_a_match: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, MatchInfo]:
    """`fuzzy_match` over places handed in batches, already in order (the first place of a
    cluster answers it; the result is in that order too).

    Each batch's features go into the pass's own DuckDB and are let go: the places are held
    there (spilling to disk past its memory limit), and only the scored edges and the places
    on them come back into polars, so the pass's memory is bounded whatever the places' count.
    """
    with tempfile.TemporaryDirectory(prefix="placeflow-match-") as spill:
        con = _connect(spill)
        try:
            height = _stage(con, batches)
            if height < 2:
                info = MatchInfo(height, 0, 0, 0, 0, 0, 0, threshold)
                return pl.DataFrame(schema=OUTPUT_SCHEMA), info
            edges, candidates = _scored_edges(con, threshold)
            apart = _apart_ids(con, not_a_match)
            return _clustered(con, height, edges, apart, candidates, threshold)
        finally:
            con.close()


def _clustered(
    con: duckdb.DuckDBPyConnection,
    height: int,
    edges: pl.DataFrame,
    apart: pl.DataFrame,
    candidates: int,
    threshold: float,
) -> tuple[pl.DataFrame, MatchInfo]:
    """The scored edges (less the not-a-match pairs) into clusters, and each member's match."""
    pair = pl.col("match_id_l").alias("a"), pl.col("match_id_r").alias("b")
    refused = edges.select(*pair).join(apart, on=["a", "b"], how="semi").height
    edges = edges.join(apart.rename({"a": "match_id_l", "b": "match_id_r"}),
                       on=["match_id_l", "match_id_r"], how="anti")  # fmt: skip
    empty = pl.DataFrame(schema=OUTPUT_SCHEMA)
    if edges.height == 0:
        info = MatchInfo(height, candidates, 0, refused, 0, 0, 0, threshold)
        return empty, info
    ends = pl.concat([edges.get_column("match_id_l"), edges.get_column("match_id_r")])
    feats = _of(con, PLACES_TABLE, "match_id, street_number, country, latitude, longitude", ends)
    ids = _of(con, IDS_TABLE, "match_id, place_key", ends)
    clusters, rebuilt = _rebuild(_components(con, edges, threshold), edges, feats, apart)
    clusters = clusters.filter(pl.len().over("cluster") > 1)
    both = pl.concat([edges, edges.select(
        pl.col("match_id_r").alias("match_id_l"), pl.col("match_id_l").alias("match_id_r"),
        "match_probability")])  # fmt: skip
    lookup = clusters.rename({"match_id": "match_id_l", "cluster": "c_l"})
    best = (
        both.join(lookup, on="match_id_l")
        .join(clusters.rename({"match_id": "match_id_r", "cluster": "c_r"}), on="match_id_r")
        .filter(pl.col("c_l") == pl.col("c_r"))
        .sort(["match_id_l", "match_probability", "match_id_r"], descending=[False, True, False])
        .unique("match_id_l", keep="first")
    )

    def named(column: str, alias: str) -> pl.DataFrame:
        return ids.rename({"match_id": column, "place_key": alias})

    result = (
        best.filter(pl.col("match_id_l") != pl.col("c_l"))
        .join(named("match_id_l", "place_key"), on="match_id_l")
        .join(named("c_l", "cluster_key"), on="c_l")
        .join(named("match_id_r", "matched_key"), on="match_id_r")
        .sort("match_id_l")
        .select(
            "place_key",
            "cluster_key",
            "matched_key",
            pl.lit(RULE).alias("match_rule"),
            pl.col("match_probability").cast(pl.Float64),
        )
    )
    info = MatchInfo(
        places=height,
        candidate_pairs=candidates,
        matched_pairs=edges.height,
        not_a_match_pairs=refused,
        clusters=clusters.get_column("cluster").n_unique(),
        merged=result.height,
        rebuilt_clusters=rebuilt,
        threshold=threshold,
    )
    return result.cast(OUTPUT_SCHEMA), info
