"""Which places already have a fresh outcome of the same kind, so need not be bought again."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import polars as pl

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
