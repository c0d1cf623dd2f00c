"""Warehouses to export: runs of validations and enrichments written straight into the schema,
at any size (the export benchmark builds a million places with the same function).

Values cover what the type mapping must carry: JSON opening hours and contact values, doubles,
booleans, dates, timestamps with time zone, nulls, quotes, newlines and non-ASCII text; each
place's request (run_places) gives it a name, an address and, for most, coordinates.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb

T0 = datetime(2026, 3, 1, 9, 30, 0, 123456, tzinfo=UTC)

_SIGNATURE = "enrich|opening_hours,phone,website,existence,open_closed|no-summary"

_ENRICH = """
insert into enrichments (
    run_id, place_key, chunk_no, position, success, attributes_requested, existence_confidence,
    operational_status, closure_confidence, closure_reason, place_summary,
    opening_hours_value, opening_hours_confidence, opening_hours_as_of, opening_hours_status,
    phone_value, phone_confidence, phone_as_of, phone_status,
    website_value, website_confidence, website_as_of, website_status,
    phone_number, website_url, error, error_code, request_id, enriched_at, billable, loaded_at
)
select
    $run_id,
    'pk' || lpad(cast(i as varchar), 7, '0'),
    (i // 10000)::integer,
    (i % 10000)::integer,
    i % 17 <> 5,
    'opening_hours,phone,website,existence,open_closed',
    case when i % 17 = 5 then null else ((i * 37 + $salt) % 1000) / 1000.0 end,
    case when i % 17 = 5 then null when i % 11 = 0 then 'closed' else 'open' end,
    case when i % 11 = 0 then 0.875 end,
    case when i % 11 = 0 then 'permanent' end,
    case when i % 7 = 0 then 'Café "Zur Börse", it''s' || chr(10) || 'open late ☕' end,
    case when i % 3 = 0 then cast('{"days":{"monday":[{"open":"08:00","close":"12:00"},'
        || '{"open":"13:00","close":"17:30"}],"sunday":"closed"}}' as json)
        when i % 3 = 1 then cast('{"days":{"monday":[{"open":"00:00","close":"23:59"}]}}' as json)
        end,
    case when i % 3 < 2 then 'high' end,
    case when i % 3 < 2 then date '2026-02-01' + (i % 28)::integer end,
    case when i % 3 < 2 then 'confirmed' else 'unconfirmed' end,
    case when i % 4 <> 0 then cast('{"number":"+1315' || lpad(cast(i % 10000000 as varchar), 7,
        '0') || '"}' as json) end,
    case when i % 4 <> 0 then 'medium' end,
    case when i % 4 <> 0 then date '2026-01-15' end,
    'confirmed',
    case when i % 5 <> 0 then cast('{"url":"https://example.com/p/' || cast(i as varchar)
        || '?a=1&b=' || cast($salt as varchar) || '"}' as json) end,
    case when i % 5 <> 0 then 'low' end,
    null,
    'estimated',
    case when i % 4 <> 0 then '+1315' || lpad(cast(i % 10000000 as varchar), 7, '0') end,
    case when i % 5 <> 0 then 'https://example.com/p/' || cast(i as varchar) || '?a=1&b='
        || cast($salt as varchar) end,
    case when i % 17 = 5 then 'could not resolve the place' end,
    case when i % 17 = 5 then 'PLACE_NOT_FOUND' end,
    'req_' || cast(i as varchar),
    $at - interval 5 minute,
    i % 17 <> 5,
    $at
from range($first, $last) as places(i)
"""

_VALIDATE = """
insert into validations (
    run_id, place_key, chunk_no, position, success, existence_confidence, operational_status,
    closure_confidence, closure_reason, error, error_code, request_id, validated_at, billable,
    loaded_at
)
select
    $run_id, 'pk' || lpad(cast(i as varchar), 7, '0'), 0, i::integer, true,
    ((i * 13) % 100) / 100.0, 'open', null, null, null, null, null, $at, true, $at
from range($first, $last) as places(i)
"""


_SENT = """
insert into run_places (run_id, place_key, chunk_no, position, request)
select
    $run_id,
    'pk' || lpad(cast(i as varchar), 7, '0'),
    $chunk,
    $position,
    to_json({
        id: 'pk' || lpad(cast(i as varchar), 7, '0'),
        poi_name: 'Place ' || cast(i as varchar) || case when i % 13 = 0 then ' "Zur Börse"'
            else '' end,
        street: cast(i % 9000 + 1 as varchar) || ' Main Street',
        address: null,
        city: 'Springfield',
        region: case when i % 2 = 0 then 'IL' end,
        postcode: lpad(cast(i % 99999 as varchar), 5, '0'),
        country: 'US',
        latitude: case when i % 3 <> 0 then 39.0 + (i % 1000) / 1000.0 end,
        longitude: case when i % 3 <> 0 then -89.0 - (i % 1000) / 1000.0 end
    })::varchar
from range($first, $last) as places(i)
"""
"""Each place's request as a run sent it: the identity places_latest and place_history show."""


def add_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    first: int,
    last: int,
    at: datetime,
    mode: str = "enrich",
    salt: int = 0,
) -> None:
    """A completed run whose outcomes (loaded at `at`) cover places first..last-1."""
    signature = _SIGNATURE if mode == "enrich" else "validate||no-summary"
    con.execute(
        "insert into runs (run_id, created_at, finished_at, status, mode, attributes, signature,"
        " submitted, succeeded) values (?, ?, ?, 'completed', ?, ?, ?, ?, ?)",
        [
            run_id,
            at - timedelta(minutes=10),
            at + timedelta(seconds=1),
            mode,
            "" if mode == "validate" else _SIGNATURE.split("|")[1],
            signature,
            last - first,
            last - first,
        ],
    )
    params = {"run_id": run_id, "first": first, "last": last, "at": at}
    chunk, position = ("(i // 10000)::integer", "(i % 10000)::integer")
    if mode != "enrich":
        chunk, position = ("0", "i::integer")
    sent = _SENT.replace("$chunk", chunk).replace("$position", position)
    con.execute(sent, {"run_id": run_id, "first": first, "last": last})
    if mode == "enrich":
        con.execute(_ENRICH, {**params, "salt": salt})
    else:
        con.execute(_VALIDATE, params)
    con.execute(
        "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at, note)"
        " values (?, 0, ?, 'charge', ?, ?, 'billable rows')",
        [run_id, f"job_{run_id}", last - first, at],
    )


def build(con: duckdb.DuckDBPyConnection, places: int) -> None:
    """A validate run over the first fifth of the places, then an enrich run over all of them
    but the first tenth (so places_latest holds both kinds)."""
    add_run(con, "run_a", first=0, last=max(1, places // 5), at=T0, mode="validate")
    add_run(con, "run_b", first=places // 10, last=places, at=T0 + timedelta(hours=1))
