"""Places already known in the warehouse, for the fuzzy dedupe to match a new run's places
against: a place a file brings that another file brought before is the same place, whatever
its spelling, and a fresh one costs nothing again.

The known places are selected in SQL by block keys, so that a warehouse of ten million places
hands the pass only those that could match: each new place's keys (`new_block_keys`, in the
run's staging) and each earlier sent row's (`known_places`, in the warehouse) come from one
macro, pf_block_keys, over the normalised fields both keep: the first word of the name with
the postcode, the city or the 2 km coordinate cell, and the first number of the street line
with the postcode or the city. A key a place lacks a part of is null. The pass then blocks and
scores them as it does the new places (`placeflow.pipeline.match`).
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import polars as pl

from placeflow.warehouse import sql_text

KnownLookup = Callable[[pl.DataFrame], pl.DataFrame]
"""The new places' block keys (block_key) -> the known places sharing one (`known_places`'
columns): how the dedupe stage, working apart from the warehouse, asks it."""
KEYS_VIEW = "pf_known_keys"
INPUT_VIEW = "pf_match_input"
_WORD = r"""nullif(lower(strip_accents(regexp_extract(
            regexp_replace(coalesce(name, ''), '[''`\x{2019}]', '', 'g'),
            '[^\s,.;:()\[\]"/&#-]+'))), '')"""
_NUMBER = r"nullif(regexp_extract(coalesce(line, ''), '[0-9]+'), '')"
_CITY = "nullif(lower(strip_accents(city)), '')"
_POST = "nullif(upper(replace(postcode, ' ', '')), '')"
_CELL = "floor(lat / 0.02)::bigint, floor(lon / 0.02)::bigint"
_PHONE = "nullif(right(regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g'), 9), '')"
BLOCK_KEYS_MACRO = f"""create or replace temp macro pf_block_keys(
    name, line, city, postcode, country, lat, lon, phone
) as [
    case when {_POST} is not null and {_WORD} is not null
        then hash('pw', coalesce(country, ''), {_POST}, {_WORD}) end,
    case when {_CITY} is not null and {_WORD} is not null
        then hash('cw', coalesce(country, ''), {_CITY}, {_WORD}) end,
    case when lat is not null and lon is not null and {_WORD} is not null
        then hash('gw', {_CELL}, {_WORD}) end,
    case when {_POST} is not null and {_NUMBER} is not null
        then hash('pn', coalesce(country, ''), {_POST}, {_NUMBER}) end,
    case when {_CITY} is not null and {_NUMBER} is not null
        then hash('cn', coalesce(country, ''), {_CITY}, {_NUMBER}) end,
    case when {_WORD} is not null and {_NUMBER} is not null
        then hash('wn', coalesce(country, ''), {_WORD}, {_NUMBER}) end,
    case when length({_PHONE}) >= 7 then hash('ph', {_PHONE}) end
]"""
"""The block keys of a place (five, null where a part is missing), over its normalised
fields: the same SQL in the run's staging and in the warehouse."""
KNOWN_SCHEMA = pl.Schema(
    {
        "run_id": pl.String, "place_key": pl.String, "source_file": pl.String,
        "source_id": pl.String, "poi_name": pl.String, "street": pl.String,
        "address": pl.String, "city": pl.String, "region": pl.String, "postcode": pl.String,
        "country": pl.String, "latitude": pl.Float64, "longitude": pl.Float64,
        "phone": pl.String, "website": pl.String,
    }
)  # fmt: skip


def new_block_keys(con: duckdb.DuckDBPyConnection, fuzzy_input: str) -> pl.DataFrame:
    """The distinct block keys (block_key) of the places `fuzzy_input` (SQL) selects."""
    con.execute(BLOCK_KEYS_MACRO)
    con.execute(f"create or replace temp view {INPUT_VIEW} as {fuzzy_input}")
    try:
        keys: pl.DataFrame = con.sql(sql_text("prepare/known_block_keys")).pl()
    finally:
        con.execute(f"drop view if exists {INPUT_VIEW}")
    return keys


def known_places(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame) -> pl.DataFrame:
    """The places earlier runs sent that share a block key with `keys` (KNOWN_SCHEMA), once
    each; none on a warehouse without runs."""
    ran = con.execute("select exists (select 1 from run_rows)").fetchall()[0][0]
    if not ran or keys.height == 0:
        return pl.DataFrame(schema=KNOWN_SCHEMA)
    con.execute(BLOCK_KEYS_MACRO)
    con.register(KEYS_VIEW, keys.select("block_key").to_arrow())
    try:
        found: pl.DataFrame = con.sql(sql_text("queries/known_places")).pl()
    finally:
        con.unregister(KEYS_VIEW)
    return found.select(pl.col(c).cast(t) for c, t in KNOWN_SCHEMA.items())
