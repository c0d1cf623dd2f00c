"""Research's fresh stage: a place whose every asked field has an answer younger than the max age
(of the same field spec, `field_sha`) is not bought again; its rows become skipped_fresh."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import duckdb
import polars as pl

from placeflow.pipeline.fresh import FreshInfo
from placeflow.pipeline.research.fields import field_signature, make_spec
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.store.warehouse import sql_text
from placeflow.support.arrow import scannable


def field_shas(spec: ResearchSpec) -> dict[str, str]:
    """Each asked field's signature (its spec and the identity flag): what an answer is fresh
    for."""
    shas = {f.name: field_signature(f, verify_identity=spec.verify_identity) for f in spec.fields}
    if spec.validate_existence:
        shas["existence"] = field_signature(
            make_spec("existence_", value_type="bool"), verify_identity=spec.verify_identity
        )
    return shas


def fresh_places(
    con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, shas: Sequence[str], cutoff: datetime
) -> pl.Series:
    """Of `keys` (a place_key column), the places with a usable answer loaded after `cutoff`
    for every field signature of `shas`."""
    con.register("research_fresh_candidates", scannable(keys.select("place_key")))
    con.register("research_fresh_specs", scannable(pl.DataFrame({"field_sha": list(shas)})))
    try:
        rows = con.execute(sql_text("queries/research_fresh"), {"cutoff": cutoff}).fetchall()
    finally:
        con.unregister("research_fresh_candidates")
        con.unregister("research_fresh_specs")
    return pl.Series("place_key", [r[0] for r in rows], dtype=pl.String)


def mark_fresh(
    deduped: pl.DataFrame,
    spec: ResearchSpec,
    *,
    con: duckdb.DuckDBPyConnection | None,
    now: datetime,
    max_age_days: float,
    force: bool,
) -> tuple[pl.DataFrame, FreshInfo]:
    """The fresh stage: places to send whose answers are all fresh turn skipped_fresh (none
    with `force`, or without a warehouse `con`)."""
    submitted = pl.col("disposition") == "submitted"
    candidates = deduped.filter(submitted)
    if con is None or force or candidates.height == 0:
        return deduped, FreshInfo(candidates=candidates.height, fresh=0)
    cutoff = now - timedelta(days=max_age_days)
    fresh = fresh_places(con, candidates, list(field_shas(spec).values()), cutoff)
    marked = deduped.with_columns(
        pl.when(submitted & pl.col("place_key").is_in(fresh.implode()))
        .then(pl.lit("skipped_fresh"))
        .otherwise(pl.col("disposition"))
        .alias("disposition")
    )
    rows = marked.filter(pl.col("disposition") == "skipped_fresh").height
    return marked, FreshInfo(candidates=candidates.height, fresh=rows)
