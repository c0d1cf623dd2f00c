"""Which known places a refresh re-checks: stale ones, oldest first, or most likely changed first.

The input of a refresh is the warehouse: every place some run sent, with the exact request of
its latest run (run_places.request), so no file is needed. A place is stale when its newest
successful outcome answering the refresh's request (sql/views/signature_answers.sql: an enrich
answers a validate and an enrich of fewer attributes) is `older_than` old or older, or when no
such outcome exists, and no attempt of that kind (a failed one included) was made since: a
place that failed within the window waits for `--retry-failed` (sql/queries/failing_places.sql)
or a smaller `older_than`. The SQL is sql/queries/stale_places.sql.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import polars as pl

from placeflow.warehouse import sql_text


def select_stale(
    con: duckdb.DuckDBPyConnection,
    *,
    older_than: timedelta,
    mode: str,
    signature: str,
    country: str | None = None,
    limit: int | None = None,
    budget: int | None = None,
    credits_per_place: int = 1,
    now: datetime,
) -> pl.DataFrame:
    """The stale places to send again, one row each, in sending order.

    Without a budget: oldest answer first (never answered first of all), then `limit`. With a
    budget (credits) smaller than the stale set: the places most likely to have changed first
    (`priority`: old answers, an unknown verdict, low existence confidence, earlier changes;
    `reason` says why), as many as `budget // credits_per_place`. Columns: place_key, request
    (the stored request rebuilt for `signature`, ready to send), stored_request, sent_run_id,
    the place fields (poi_name ... longitude), answered_run_id, answered_at, attempted_at, age_days,
    operational_status, existence_confidence, changes_before, failures_in_a_row, priority,
    reason. `older_than` 0 selects every known place.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (datetime.now(UTC))")
    if older_than < timedelta(0):
        raise ValueError("older_than must not be negative")
    if signature.split("|", 1)[0] != mode:
        raise ValueError(f"signature {signature!r} is not of mode {mode!r}")
    if limit is not None and limit < 0:
        raise ValueError("limit must be 0 or more")
    if budget is not None and budget < 0:
        raise ValueError("budget must be 0 or more")
    if credits_per_place < 1:
        raise ValueError("credits_per_place must be 1 or more")
    params = {"signature": signature, "cutoff": now - older_than, "country": country, "now": now}
    stale: pl.DataFrame = con.sql(sql_text("queries/stale_places"), params=params).pl()
    cap = None if budget is None else budget // credits_per_place
    if cap is not None and cap < stale.height:
        ordered = stale.sort(
            ["priority", "answered_at", "place_key"],
            descending=[True, False, False],
            nulls_last=[False, False, False],
        )
        ordered = ordered.head(cap)
    else:
        ordered = stale.sort(["answered_at", "place_key"], nulls_last=False)
    return ordered.head(limit) if limit is not None else ordered
