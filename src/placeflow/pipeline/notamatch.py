"""Pairs of places a person marked as different (`not_a_match`): the fuzzy pass never merges
them, in this run or any later one. `placeflow not-a-match KEY_A KEY_B` marks a pair."""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from placeflow.errors import OptionsError

PAIR_SCHEMA = {"place_key_a": pl.String, "place_key_b": pl.String}


def not_a_match_pairs(con: duckdb.DuckDBPyConnection | None) -> pl.DataFrame | None:
    """Every marked pair (place_key_a < place_key_b); None without a warehouse or a table."""
    if con is None:
        return None
    exists = con.execute(
        "select count(*) from duckdb_tables() where table_name = 'not_a_match'"
    ).fetchall()[0][0]
    if not exists:  # a warehouse opened read-only before its migration to 004
        return None
    rows = con.execute("select place_key_a, place_key_b from not_a_match").fetchall()
    return pl.DataFrame(rows, schema=PAIR_SCHEMA, orient="row")


def mark_not_a_match(
    con: duckdb.DuckDBPyConnection,
    key_a: str,
    key_b: str,
    *,
    note: str | None = None,
    now: datetime,
) -> tuple[str, str]:
    """Record that two places differ (again: the note and time are replaced); the pair, sorted."""
    a, b = sorted((key_a.strip(), key_b.strip()))
    if not a or a == b:
        raise OptionsError("not-a-match takes two different place keys")
    con.execute(
        "insert or replace into not_a_match (place_key_a, place_key_b, noted_at, note)"
        " values (?, ?, ?, ?)",
        [a, b, now, note],
    )
    return a, b
