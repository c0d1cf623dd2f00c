"""Places already known in the warehouse, for the fuzzy dedupe to match a new run's places
against: a place a file brings that another file brought before is the same place, whatever
its spelling, and a fresh one costs nothing again.

The known places are selected in SQL by block keys, so that a warehouse of ten million places
hands the pass only those that could match: each new place's keys (`new_block_keys`, in the
run's staging) and each earlier sent row's (`known_places`, in the warehouse) come from one
macro, pf_block_keys, over the normalised fields both keep: the first word of the name with
the postcode, the city or the 2 km coordinate cell; the first number of the street line with
the postcode, the city or the name's first word; the phone's last 9 digits. A key a place
lacks a part of is null; a key more than
MOST_PER_KEY known places share selects none of them (a chain's name in a city: their house
numbers and phones still select them). The pass then blocks and scores them as it does the new
places (`placeflow.pipeline.match`).
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import polars as pl

from placeflow.store.warehouse import sql_text
from placeflow.support.arrow import fetched, scannable

KnownLookup = Callable[[pl.DataFrame], pl.DataFrame]
"""The new places' block keys (block_key) -> the known places sharing one (`known_places`'
columns): how the dedupe stage, working apart from the warehouse, asks it."""
MOST_PER_KEY = 40
"""A block key more known places share than this selects none of them (the fuzzy pass's own
blocks are capped alike, at MAX_BLOCK of `placeflow.pipeline.match.features`)."""
KEYS_VIEW = "pf_known_keys"
INPUT_VIEW = "pf_match_input"
BLOCK_KEYS_MACRO = r"""
create or replace temp macro pf_block_parts(name, line, city, postcode, country, lat, lon, phone)
as struct_pack(
    w := nullif(lower(strip_accents(regexp_extract(
        replace(replace(replace(coalesce(name, ''), '''', ''), '`', ''), chr(8217), ''),
        '[^\s,.;:()\[\]"/&#-]+'))), ''),
    n := nullif(regexp_extract(coalesce(line, ''), '[0-9]+'), ''),
    c := nullif(lower(strip_accents(city)), ''),
    p := nullif(upper(replace(postcode, ' ', '')), ''),
    k := coalesce(country, ''),
    cy := floor(lat / 0.02)::bigint,
    cx := floor(lon / 0.02)::bigint,
    ph := nullif(right(regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g'), 9), '')
);
create or replace temp macro pf_block_keys(b) as [
    case when b.p is not null and b.w is not null then hash('pw', b.k, b.p, b.w) end,
    case when b.c is not null and b.w is not null then hash('cw', b.k, b.c, b.w) end,
    case when b.cy is not null and b.cx is not null and b.w is not null
        then hash('gw', b.cy, b.cx, b.w) end,
    case when b.p is not null and b.n is not null then hash('pn', b.k, b.p, b.n) end,
    case when b.c is not null and b.n is not null then hash('cn', b.k, b.c, b.n) end,
    case when b.w is not null and b.n is not null then hash('wn', b.k, b.w, b.n) end,
    case when length(b.ph) >= 7 then hash('ph', b.ph) end
];
"""
"""pf_block_parts: the parts of a place's block keys from its normalised fields (the name's
first word, the line's first number, city, postcode, country, coordinate cell, phone's last 9
digits), taken once per place (a column of a CTE); pf_block_keys: the seven keys of those
parts, null where a part is missing. The same SQL in the run's staging and in the warehouse."""
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
        keys: pl.DataFrame = fetched(con.sql(sql_text("prepare/known_block_keys")))
    finally:
        con.execute(f"drop view if exists {INPUT_VIEW}")
    return keys


def any_known(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether an earlier run sent places (a new warehouse has none to look up); the rows of
    a run still being opened (run_openings) are not known yet."""
    found = con.execute(
        "select exists (select 1 from run_rows"
        " anti join run_openings on run_rows.run_id = run_openings.run_id)"
    ).fetchall()
    return bool(found[0][0])


def known_places(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame) -> pl.DataFrame:
    """The places earlier runs sent that share a block key with `keys` (KNOWN_SCHEMA), once
    each; none on a warehouse without runs."""
    if keys.height == 0 or not any_known(con):
        return pl.DataFrame(schema=KNOWN_SCHEMA)
    con.execute(BLOCK_KEYS_MACRO)
    con.register(KEYS_VIEW, scannable(keys.select("block_key")))
    try:
        found: pl.DataFrame = fetched(
            con.sql(sql_text("queries/known_places"), params={"most": MOST_PER_KEY})
        )
    finally:
        con.unregister(KEYS_VIEW)
    return found.select(pl.col(c).cast(t) for c, t in KNOWN_SCHEMA.items())
