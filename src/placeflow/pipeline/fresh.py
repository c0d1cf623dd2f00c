"""Which places already have a fresh outcome of the same kind, so need not be bought again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import polars as pl

from placeflow.options import RunOptions
from placeflow.warehouse import sql_text

CANDIDATES = "fresh_key_candidates"
"""The name `sql/queries/fresh_keys.sql` reads the candidate keys from."""


def fresh_keys(
    con: duckdb.DuckDBPyConnection,
    keys: pl.DataFrame,
    *,
    signature: str,
    max_age: timedelta,
    now: datetime,
) -> pl.DataFrame:
    """The keys whose newest successful outcome with `signature` is younger than `max_age`.

    One query joins the frame (its `place_key` column) to every outcome; the answer has
    place_key, run_id and outcome_at (the outcome's load time), once per key, in `keys` order.
    An outcome exactly `max_age` old is stale.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (datetime.now(UTC))")
    if max_age < timedelta(0):
        raise ValueError("max_age must not be negative")
    none = pl.DataFrame(
        schema={"place_key": pl.String, "run_id": pl.String, "outcome_at": pl.Datetime("us", "UTC")}
    )
    if not con.execute("select exists (select 1 from runs)").fetchall()[0][0]:
        # No run yet: nothing is fresh. (DuckDB 2.0 cannot bind signature_answers over the
        # outcomes when `runs` is empty: its statistics of an all-null column fold it away.)
        return none
    con.register(CANDIDATES, keys.select(pl.col("place_key").cast(pl.String)).to_arrow())
    try:
        relation = con.sql(
            sql_text("queries/fresh_keys"),
            params={"signature": signature, "cutoff": now - max_age},
        )
        frame: pl.DataFrame = relation.pl()
        return frame
    finally:
        con.unregister(CANDIDATES)


@dataclass(frozen=True)
class FreshInfo:
    """How many places to send were skipped: a fresh outcome of the same kind exists."""

    candidates: int
    fresh: int


def mark_fresh(
    con: duckdb.DuckDBPyConnection | None,
    deduped: pl.DataFrame,
    options: RunOptions,
    *,
    now: datetime,
) -> tuple[pl.DataFrame, FreshInfo]:
    """Fresh stage: the places to send that have a fresh outcome become `skipped_fresh`.

    Without a warehouse (`con` None) or with `force`, nothing is fresh.
    """
    first = deduped.filter(pl.col("disposition") == "submitted").select("place_key")
    fresh = pl.DataFrame(schema={"place_key": pl.String})
    if con is not None and not options.force and first.height:
        fresh = fresh_keys(
            con,
            first,
            signature=options.signature,
            max_age=timedelta(days=options.max_age_days),
            now=now,
        ).select("place_key")
    is_fresh = pl.col("place_key").is_in(fresh["place_key"].implode())
    marked = deduped.with_columns(
        pl.when((pl.col("disposition") == "submitted") & is_fresh)
        .then(pl.lit("skipped_fresh"))
        .otherwise(pl.col("disposition"))
        .alias("disposition")
    )
    return marked, FreshInfo(candidates=first.height, fresh=fresh.height)
