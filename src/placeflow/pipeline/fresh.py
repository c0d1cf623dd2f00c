"""Fresh stage: which places already have a fresh outcome of the same kind, so need not be
bought again, and which keep failing, so are held back.

The stage works on the staging tables in DuckDB (`placeflow.pipeline.staging`): the places to
send are looked up in the warehouse by its queries (sql/queries/fresh_*.sql, read from a view
over the staged places) and marked in SQL (sql/prepare/fresh_*.sql), so nothing of the input's
size is held in polars. `mark_fresh` runs the same on a frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb
import polars as pl

from placeflow.errors import OptionsError
from placeflow.options import RunOptions
from placeflow.pipeline.staging import Staging
from placeflow.state.records import DEDUPED, MARKED
from placeflow.store.warehouse import sql_text
from placeflow.support.arrow import fetched, scannable

CANDIDATES = "pf_fresh_candidates"
"""What the freshness queries read the places to look up from: a view over the staged places
(sql/prepare/fresh_candidates.sql), or a registered frame (`fresh_keys`)."""
OWN_KEYS = "pf_fresh_own_keys"
"""The staged rows' own keys (a view): a place answered under none of them was matched by the
dedupe to a place the warehouse knows."""
OWN, CORE, HELD, REKEYED = "pf_fresh_own", "pf_fresh_core", "pf_fresh_held", "pf_fresh_rekeyed"
CLAIMED = "pf_fresh_claimed"
"""The stage's work tables: keys fresh themselves; keys answered under an earlier key of their
core (place_key, outcome_key); keys held back (place_key, failures_in_a_row, last_error); keys
run before under other keys; keys another unfinished run is buying (place_key, owner_run_id)."""
OUTCOMES = "pf_fresh_outcomes"
"""The outcomes the freshness queries look in: a view of place_outcomes (ALL_OUTCOMES), or a
table of those loaded since SEEN was taken (SINCE_SEEN: `changed_since`)."""
SEEN = "pf_fresh_seen"
"""The loads of outcomes (run_id, chunk_no, outcome_at) the warehouse held when a run looked up
its fresh places outside its hold of the warehouse (`for_recheck`)."""
SEEN_CLAIMS = "pf_fresh_seen_claims"
"""The chunks (run_id, chunk_no) whose places other runs claimed then (place_claims): a chunk
claiming after it can be told."""
TO_SEND = "pf_fresh_to_send"
"""The places a plan made outside the hold sends, with the columns the freshness queries read
(`for_recheck`): what `changed_since` asks about."""
ALL_OUTCOMES = f"create or replace temp view {OUTCOMES} as select * from place_outcomes"  # noqa: S608 - our names
SINCE_SEEN = f"select * from place_outcomes anti join {SEEN} using (run_id, chunk_no, outcome_at)"  # noqa: S608 - our names
NEW_CLAIMS = f"select * from place_claims anti join {SEEN_CLAIMS} using (run_id, chunk_no)"  # noqa: S608 - our names
_EMPTY = {
    OWN: "select null::varchar as place_key where false",
    CORE: "select null::varchar as place_key, null::varchar as outcome_key where false",
    HELD: "select null::varchar as place_key, null::bigint as failures_in_a_row,"
    " null::varchar as last_error where false",
    REKEYED: "select null::varchar as place_key where false",
    CLAIMED: "select null::varchar as place_key, null::varchar as owner_run_id where false",
}

HOLD_AFTER = 3
"""Failures in a row (no success since) after which a place is held back (`held_failing`)."""


@dataclass(frozen=True)
class FreshInfo:
    """How many places to send were skipped (a fresh outcome exists, under their key or their
    core key) or held back (they failed HOLD_AFTER times in a row), and what to tell the user."""

    candidates: int
    fresh: int
    fresh_by_core: int = 0
    held_failing: int = 0
    warnings: tuple[str, ...] = ()
    claimed: int = 0
    """Places another unfinished run is buying (the same answer): not bought again."""
    owners: tuple[tuple[str, int], ...] = ()
    """(run_id, places) of the runs those places are left to."""


def _cutoff(now: datetime, max_age: timedelta) -> datetime:
    if now.tzinfo is None:
        raise OptionsError("now must be timezone-aware (datetime.now(UTC))")
    if max_age < timedelta(0):
        raise OptionsError("max_age must not be negative")
    return now - max_age


def _has_runs(con: duckdb.DuckDBPyConnection) -> bool:
    # No run yet: nothing is fresh, nothing failed. (DuckDB 2.0 cannot bind signature_answers
    # over the outcomes when `runs` is empty: its statistics of an all-null column fold it away.)
    return bool(con.execute("select exists (select 1 from runs)").fetchall()[0][0])


def fresh_keys(
    con: duckdb.DuckDBPyConnection,
    keys: pl.DataFrame,
    *,
    signature: str,
    max_age: timedelta,
    now: datetime,
) -> pl.DataFrame:
    """The keys whose newest successful outcome with `signature` is younger than `max_age`.

    One query (sql/queries/fresh_keys.sql) joins the frame (its `place_key` column) to every
    outcome; the answer has place_key, run_id and outcome_at (the outcome's load time), once
    per key, in `keys` order. An outcome exactly `max_age` old is stale.
    """
    cutoff = _cutoff(now, max_age)
    none = pl.DataFrame(
        schema={"place_key": pl.String, "run_id": pl.String, "outcome_at": pl.Datetime("us", "UTC")}
    )
    if not _has_runs(con):
        return none
    frame = keys.select(pl.col("place_key").cast(pl.String)).with_row_index("row_ord")
    con.register(CANDIDATES, scannable(frame))
    con.execute(ALL_OUTCOMES)
    try:
        params = {"signature": signature, "cutoff": cutoff}
        found: pl.DataFrame = fetched(con.sql(sql_text("queries/fresh_keys"), params=params))
        return found
    finally:
        con.execute(f"drop view if exists {OUTCOMES}")
        con.unregister(CANDIDATES)


def _create_or_empty(staging: Staging, table: str, query: str, **params: object) -> None:
    """`table` as the result of the warehouse query `query`; empty on a warehouse from before
    core keys or claims (a read-only preview cannot migrate it)."""
    try:
        staging.create(table, sql_text(query), params)
    except (duckdb.BinderException, duckdb.CatalogException):  # older, read-only: no view
        staging.create(table, _EMPTY[table])


def _look_up(staging: Staging, options: RunOptions, now: datetime, *, fresh: bool) -> None:
    """The work tables from the warehouse: fresh keys (own, then core) unless not `fresh`,
    the re-keyed places, and the held places unless `retry_failed`."""
    if fresh:
        at = _at(options, now)
        staging.con.execute(ALL_OUTCOMES)
        staging.create(OWN, sql_text("queries/fresh_keys"), at)
        _create_or_empty(staging, CORE, "queries/fresh_core_keys", **at)
        _create_or_empty(staging, REKEYED, "queries/rekeyed_places")
    if not options.retry_failed:
        staging.create(HELD, sql_text("queries/failing_places"), {"failures": HOLD_AFTER})
    # Whatever `force` says: a place another run is buying right now is never bought twice.
    _create_or_empty(staging, CLAIMED, "queries/claimed_places", signature=options.signature)


def _at(options: RunOptions, now: datetime) -> dict[str, object]:
    """The freshness queries' parameters: the run's signature and its cutoff."""
    return {"signature": options.signature,
            "cutoff": _cutoff(now, timedelta(days=options.max_age_days))}  # fmt: skip


def _rekey_warnings(staging: Staging) -> tuple[str, ...]:
    """A file most of whose places were run before under other keys: say so, and whether
    their earlier outcomes were used or they are bought again."""
    return tuple(
        f"{file}: {m:,} of {n:,} places were run before under other keys (region or postcode"
        f" newly filled or mapped differently, or spelled otherwise?); {u:,} use their earlier"
        f" fresh outcomes, {m - u:,} are sent again"
        for file, n, m, u in staging.con.sql(sql_text("prepare/fresh_rekeyed_files")).fetchall()
    )


def mark_fresh_staged(
    staging: Staging, options: RunOptions, *, now: datetime, keep_deduped: bool = False
) -> FreshInfo:
    """Fresh stage: MARKED from the deduped places (DEDUPED, dropped after). The places to send
    that have a fresh outcome become `skipped_fresh`, and those that keep failing
    `held_failing` (unless `retry_failed`).

    A fresh outcome is found under the place's own key, else under an earlier key of the same
    core (`outcome_key`, added last, names whose outcome answers each row; the note says so).
    Without a warehouse (`staging.warehouse` False) or with `force`, nothing is fresh (with
    `force`, places that keep failing are still held: `retry_failed` sends them); without a
    warehouse nothing is held either. MARKED's rows are in no particular order: read them by
    row_ord. `keep_deduped`: DEDUPED is kept (a lookup made beside the warehouse may have to be
    made again: `changed_since`).
    """
    con = staging.con
    view = sql_text("prepare/fresh_candidates")
    con.execute(f"create or replace temp view {CANDIDATES} as {view}")
    # staged by no dedupe, the rows are under their own keys
    own_key = "own_key" if staging.has_column(DEDUPED, "own_key") else "place_key"
    con.execute(
        f"create or replace temp view {OWN_KEYS} as"  # noqa: S608 - our view, table and column
        f" select distinct {own_key} as place_key from {DEDUPED}"
    )
    try:
        for table, empty in _EMPTY.items():
            staging.create(table, empty)
        candidates = staging.count(CANDIDATES)
        looked = bool(staging.warehouse and candidates and _has_runs(con))
        if looked:
            _look_up(staging, options, now, fresh=not options.force)
        staging.create(MARKED, sql_text("prepare/fresh_marked"))
        own, by_core, held = 0, 0, 0
        owners: list[tuple[Any, ...]] = []
        warnings: tuple[str, ...] = ()
        if looked:  # else the work tables are empty: nothing fresh, held, claimed or re-keyed
            counted = con.execute(
                f"select (select count(*) from {OWN}), (select count(*) from {CORE}),"  # noqa: S608 - our staging tables
                f" (select count(*) from {MARKED} where disposition = 'held_failing')"
            ).fetchall()
            own, by_core, held = (int(n) for n in counted[0])
            owners = con.execute(
                f"select claimed.owner_run_id, count(*) from {CLAIMED} as claimed"  # noqa: S608 - our tables
                f" semi join {MARKED} as marked on claimed.place_key = marked.place_key"
                " and marked.disposition = 'claimed'"
                " group by claimed.owner_run_id order by claimed.owner_run_id"
            ).fetchall()
            warnings = _rekey_warnings(staging)
    finally:
        con.execute(f"drop view if exists {CANDIDATES}")
        con.execute(f"drop view if exists {OWN_KEYS}")
        con.execute(f"drop view if exists {OUTCOMES}")
        staging.drop(*_EMPTY)
    if not keep_deduped:
        staging.drop(DEDUPED)
    return FreshInfo(
        candidates=candidates,
        fresh=own + by_core,
        fresh_by_core=by_core,
        held_failing=held,
        warnings=warnings,
        claimed=sum(int(n) for _, n in owners),
        owners=tuple((str(r), int(n)) for r, n in owners),
    )


def for_recheck(staging: Staging) -> tuple[str, ...]:
    """What `changed_since` asks about, from the marked places and the warehouse as they are
    now (taken in the read that looks up the fresh places): SEEN, the loads of outcomes the
    warehouse holds, and SEEN_CLAIMS, the chunks other runs are buying, so that a load or a
    claim after them can be told; TO_SEND, the places to send. Their names, to move them into
    the hold: SEEN and SEEN_CLAIMS (a row a load or a chunk) first, TO_SEND (a row a place) only
    when asked."""
    staging.create(SEEN, "select distinct run_id, chunk_no, outcome_at from place_outcomes")
    staging.create(SEEN_CLAIMS, "select distinct run_id, chunk_no from place_claims")
    staging.create(
        TO_SEND,
        "select row_ord, place_key, core_key, region, postcode, source_file"  # noqa: S608 - our staging table
        f" from {MARKED} where disposition = 'submitted'",
    )
    return SEEN, SEEN_CLAIMS


def changed_since(
    staging: Staging, options: RunOptions, *, now: datetime, to_send: Callable[[str], None]
) -> int:
    """How many of the places to send (TO_SEND) were answered or taken by another run since
    the fresh stage looked them up outside the hold (SEEN, SEEN_CLAIMS; all from
    `for_recheck`): a fresh outcome loaded since, under their own key or their core's (unless
    `force`), or a claim by a chunk that was not claiming then. Asked in the hold that records
    the run: 0, the plan stands (one place, one purchase); else the lookup and plan are made
    again (`placeflow.runner.opening`). Outcomes replaced since count as loaded since: only a
    load after SEEN can make a place fresh that was not. Places that failed once more since are
    not held back by it: that costs a purchase, not a second one.

    The hold's work follows what changed, not the plan's size: when no outcome was loaded and
    no chunk began claiming since, the plan stands at once; else `to_send(TO_SEND)` brings the
    places to send into the staging and they are looked up."""
    con = staging.con
    try:
        loaded = not options.force and _any(con, SINCE_SEEN)
        claimed = _any(con, NEW_CLAIMS)
        if not (loaded or claimed):
            return 0
        to_send(TO_SEND)
        con.execute(f"create or replace temp view {CANDIDATES} as select * from {TO_SEND}")  # noqa: S608 - our staging table
        if not staging.count(CANDIDATES):
            return 0
        asked: list[tuple[str, dict[str, object]]] = []
        if claimed:
            asked.append(("queries/claimed_places", {"signature": options.signature}))
        if loaded:
            staging.create(OUTCOMES, SINCE_SEEN)
            at = _at(options, now)
            asked += [("queries/fresh_keys", at), ("queries/fresh_core_keys", at)]
        return sum(_count(con, sql_text(query), params) for query, params in asked)
    finally:
        con.execute(f"drop view if exists {CANDIDATES}")
        staging.drop(OUTCOMES, SEEN, SEEN_CLAIMS, TO_SEND)


def _any(con: duckdb.DuckDBPyConnection, query: str) -> bool:
    """Whether `query` gives a row."""
    return bool(con.execute(f"select exists ({query})").fetchall()[0][0])


def _count(con: duckdb.DuckDBPyConnection, query: str, params: dict[str, object]) -> int:
    """The rows `query` (one of sql/queries/) gives."""
    found = con.execute(f"select count(*) from (\n{query}\n)", params).fetchall()  # noqa: S608 - our queries
    return int(found[0][0])


@contextmanager
def _staging_for(con: duckdb.DuckDBPyConnection | None) -> Iterator[Staging]:
    """Temporary tables on the warehouse `con` (read-only too), else a scratch database."""
    if con is None:
        with Staging.scratch() as scratch:
            yield scratch
        return
    staging = Staging(con, warehouse=True)
    try:
        yield staging
    finally:
        staging.drop(DEDUPED, MARKED)


LOOKED_UP = ("row_ord", "note", "core_key", "region", "postcode", "source_file")
"""Columns the stage reads besides place_key and disposition; a frame without them gets them
empty for the stage (row_ord: its order), and back without them."""


def mark_fresh(
    con: duckdb.DuckDBPyConnection | None,
    deduped: pl.DataFrame,
    options: RunOptions,
    *,
    now: datetime,
) -> tuple[pl.DataFrame, FreshInfo]:
    """`mark_fresh_staged` on a frame: staged on the warehouse `con` as temporary tables (or
    in a scratch database when `con` is None: nothing is fresh), marked, and read back in
    row_ord order with `outcome_key` last (a frame without a note gets it after that)."""
    missing = [c for c in LOOKED_UP if c not in deduped.columns]
    own = deduped.drop("outcome_key", strict=False)
    if "row_ord" in missing:
        own = own.with_row_index("row_ord")
    own = own.with_columns(pl.lit(None, pl.String).alias(c) for c in missing if c != "row_ord")
    with _staging_for(con) as staging, staging.limited():
        staging.drop(DEDUPED, MARKED)
        staging.append(DEDUPED, own)
        del own
        info = mark_fresh_staged(staging, options, now=now)
        marked = staging.frame(MARKED)
    marked = marked.drop(c for c in missing if c != "note")
    return (marked.select(pl.exclude("note"), "note") if "note" in missing else marked), info
