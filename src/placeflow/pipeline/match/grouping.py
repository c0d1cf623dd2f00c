"""Clusters of the fuzzy pass from its scored edges, free of pairs that may not be merged.

Splink's connected components join every chain of edges (A~B, B~C); a cluster holding a pair
that may never be merged (`placeflow.pipeline.match.model.CONFLICT`, or marked not-a-match:
two store numbers joined through a third listing without one) is rebuilt from its edges, the
most probable first, joining two groups only when no pair across them is forbidden. The
forbidden pairs are found in DuckDB over the members of clusters of three or more (a cluster
of two is one edge, already tested).

Each cluster is answered by its first place (the lowest match_id: a place already known in the
warehouse, staged first, when the cluster has one); every other member is returned with that
representative, the place it matched most probably within the cluster, that match's
probability (the engine names the places and reads that pair's evidence).
"""

from __future__ import annotations

import duckdb
import polars as pl

from placeflow.pipeline.match.model import CONFLICT
from placeflow.support.arrow import fetched, scannable

PAIRS = pl.Schema({"a": pl.Int64, "b": pl.Int64})


def components(
    con: duckdb.DuckDBPyConnection, edges: pl.DataFrame, threshold: float
) -> pl.DataFrame:
    """(match_id, cluster) of every place on an edge, by Splink's connected components; each
    cluster named by its smallest member (stable, and independent of Splink's naming)."""
    from splink import DuckDBAPI
    from splink.clustering import cluster_pairwise_predictions_at_threshold

    ends = pl.concat([edges.get_column("match_id_l"), edges.get_column("match_id_r")])
    nodes = ends.unique().sort().rename("match_id").to_frame()
    cc = cluster_pairwise_predictions_at_threshold(
        nodes.to_arrow(),  # Splink takes pyarrow tables (the fuzzy pass imports it anyway)
        edges.select("match_id_l", "match_id_r", "match_probability").to_arrow(),
        db_api=DuckDBAPI(con),
        node_id_column_name="match_id",
        threshold_match_probability=threshold,
    )
    sql = f"select match_id, cluster_id from {cc.physical_name}"  # noqa: S608 - Splink's table name
    out: pl.DataFrame = fetched(con.sql(sql))
    con.execute(f"drop table if exists {cc.physical_name}")
    return out.select("match_id", pl.col("match_id").min().over("cluster_id").alias("cluster"))


def forbidden(
    con: duckdb.DuckDBPyConnection, clusters: pl.DataFrame, places: str, apart: pl.DataFrame
) -> pl.DataFrame:
    """(a, b), a < b: the pairs within one cluster of three or more that may never be merged
    (CONFLICT over `places`, or a not-a-match pair of `apart`)."""
    big = clusters.filter(pl.len().over("cluster") >= 3)
    if big.height == 0:
        return pl.DataFrame(schema=PAIRS)
    con.register("pf_match_members", scannable(big))
    try:
        found: pl.DataFrame = fetched(
            con.sql(
                "select x.match_id as a, y.match_id as b from pf_match_members x"  # noqa: S608 - our tables and rules
                " join pf_match_members y on x.cluster = y.cluster and x.match_id < y.match_id"
                f" join {places} l on l.match_id = x.match_id"
                f" join {places} r on r.match_id = y.match_id"
                f" where {CONFLICT}"
            )
        )
    finally:
        con.unregister("pf_match_members")
    marked = apart.filter(pl.col("a") < pl.col("b"))
    return pl.concat([found.cast(PAIRS), marked.cast(PAIRS)]).unique()


class _Groups:
    """Union of places into groups that hold no forbidden pair."""

    def __init__(self, ids: list[int], apart: set[tuple[int, int]]):
        self.root = {i: i for i in ids}
        self.members = {i: [i] for i in ids}
        self.apart = apart

    def _allowed(self, a: list[int], b: list[int]) -> bool:
        return not any((min(i, j), max(i, j)) in self.apart for i in a for j in b)

    def join(self, i: int, j: int) -> None:
        ri, rj = self.root[i], self.root[j]
        if ri == rj or not self._allowed(self.members[ri], self.members[rj]):
            return
        keep, gone = min(ri, rj), max(ri, rj)
        moved = self.members.pop(gone)
        for m in moved:
            self.root[m] = keep
        self.members[keep].extend(moved)


def rebuild(
    clusters: pl.DataFrame, edges: pl.DataFrame, banned: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """Clusters holding a `banned` pair rebuilt edge by edge, most probable first (a few
    clusters: a loop over their edges); how many were rebuilt."""
    bad = banned.join(clusters.rename({"match_id": "a"}), on="a").get_column("cluster").unique()
    if bad.len() == 0:
        return clusters, 0
    members = clusters.filter(pl.col("cluster").is_in(bad.implode()))
    ids = members.get_column("match_id")
    groups = _Groups(ids.to_list(), {(a, b) for a, b in banned.iter_rows()})
    replay = edges.filter(pl.col("match_id_l").is_in(ids.implode())).sort(
        ["match_probability", "match_id_l", "match_id_r"], descending=[True, False, False]
    )
    for left, right in replay.select("match_id_l", "match_id_r").iter_rows():
        groups.join(left, right)
    rebuilt = pl.DataFrame(
        {"match_id": list(groups.root), "cluster": list(groups.root.values())},
        schema={"match_id": pl.Int64, "cluster": pl.Int64},
    )
    kept = clusters.filter(~pl.col("cluster").is_in(bad.implode()))
    return pl.concat([kept, rebuilt]), bad.len()


def merged_places(clusters: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """A row per member of a cluster of two or more but its first, in match_id order: its
    match_id, its cluster (the first member's match_id), matched_id (the member it matched most
    probably, by an edge within the cluster) and that edge's match_probability. Ids alone: the
    engine names them and reads the edge's evidence."""
    clusters = clusters.filter(pl.len().over("cluster") > 1)
    columns = ["match_id_l", "match_id_r", "match_probability"]
    flipped = edges.select(
        pl.col("match_id_r").alias("match_id_l"), pl.col("match_id_l").alias("match_id_r"),
        "match_probability",
    )  # fmt: skip
    both = pl.concat([edges.select(columns), flipped])
    best = (
        both.join(clusters.rename({"match_id": "match_id_l", "cluster": "c_l"}), on="match_id_l")
        .join(clusters.rename({"match_id": "match_id_r", "cluster": "c_r"}), on="match_id_r")
        .filter(pl.col("c_l") == pl.col("c_r"))
        .sort(["match_id_l", "match_probability", "match_id_r"], descending=[False, True, False])
        .unique("match_id_l", keep="first")
    )
    return (
        best.filter(pl.col("match_id_l") != pl.col("c_l"))
        .sort("match_id_l")
        .select(
            pl.col("match_id_l").alias("match_id"),
            pl.col("c_l").alias("cluster"),
            pl.col("match_id_r").alias("matched_id"),
            pl.col("match_probability").cast(pl.Float64),
        )
    )
