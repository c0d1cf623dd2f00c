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


HOLD_AFTER = 3
"""Failures in a row (no success since) after which a place is held back (`held_failing`)."""
CORE_CANDIDATES = "fresh_core_candidates"


@dataclass(frozen=True)
class FreshInfo:
    """How many places to send were skipped (a fresh outcome exists, under their key or their
    core key) or held back (they failed HOLD_AFTER times in a row), and what to tell the user."""

    candidates: int
    fresh: int
    fresh_by_core: int = 0
    held_failing: int = 0
    warnings: tuple[str, ...] = ()


def _query(
    con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame, sql: str, **params: object
) -> pl.DataFrame:
    con.register(name, frame.to_arrow())
    try:
        out: pl.DataFrame = con.sql(sql_text(sql), params=params).pl()
        return out
    finally:
        con.unregister(name)


def fresh_by_core(
    con: duckdb.DuckDBPyConnection,
    candidates: pl.DataFrame,
    *,
    signature: str,
    max_age: timedelta,
    now: datetime,
) -> pl.DataFrame:
    """place_key -> outcome_key: candidates whose earlier place (same core key, region and
    postcode then empty or the same) has a fresh outcome (sql/queries/fresh_core_keys.sql)."""
    none = pl.DataFrame(schema={"place_key": pl.String, "outcome_key": pl.String})
    if candidates.height == 0:
        return none
    frame = candidates.select("place_key", "core_key", "region", "postcode")
    try:
        return _query(
            con, CORE_CANDIDATES, frame, "queries/fresh_core_keys",
            signature=signature, cutoff=now - max_age,
        )  # fmt: skip
    except duckdb.BinderException:  # a warehouse from before core keys (read-only preview)
        return none


def failing(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Places that failed HOLD_AFTER times in a row: place_key, failures_in_a_row, last_error."""
    out: pl.DataFrame = con.sql(
        sql_text("queries/failing_places"), params={"failures": HOLD_AFTER}
    ).pl()
    return out.select("place_key", "failures_in_a_row", "last_error")


def rekeyed(con: duckdb.DuckDBPyConnection, candidates: pl.DataFrame) -> pl.DataFrame:
    """Candidates no run sent under their own key but one did under their core key
    (sql/queries/rekeyed_places.sql): the same places, newly keyed."""
    none = pl.DataFrame(schema={"place_key": pl.String})
    if candidates.height == 0:
        return none
    frame = candidates.select("place_key", "core_key")
    try:
        return _query(con, CORE_CANDIDATES, frame, "queries/rekeyed_places")
    except duckdb.BinderException:  # a warehouse from before core keys (read-only preview)
        return none


def _rekey_warnings(
    sent: pl.DataFrame, by_core: pl.DataFrame, renamed: pl.DataFrame
) -> tuple[str, ...]:
    """A file most of whose places were run before under other keys: say so, and whether
    their earlier outcomes were used or they are bought again."""
    if renamed.height == 0:
        return ()
    matched = pl.col("place_key").is_in(by_core["place_key"].implode())
    moved = pl.col("place_key").is_in(renamed["place_key"].implode())
    per_file = sent.group_by("source_file", maintain_order=True).agg(
        pl.len().alias("places"), moved.sum().alias("moved"), (moved & matched).sum().alias("used")
    )
    return tuple(
        f"{file}: {m:,} of {n:,} places were run before under other keys (region or postcode"
        f" newly filled or mapped differently?); {u:,} use their earlier fresh outcomes,"
        f" {m - u:,} are sent again"
        for file, n, m, u in per_file.iter_rows()
        if m * 2 > n
    )


def mark_fresh(
    con: duckdb.DuckDBPyConnection | None,
    deduped: pl.DataFrame,
    options: RunOptions,
    *,
    now: datetime,
) -> tuple[pl.DataFrame, FreshInfo]:
    """Fresh stage: the places to send that have a fresh outcome become `skipped_fresh`, and
    those that keep failing `held_failing` (unless `retry_failed`).

    A fresh outcome is found under the place's own key, else under an earlier key of the same
    core (`outcome_key` names whose outcome answers each row). Without a warehouse (`con` None)
    or with `force`, nothing is fresh.
    """
    submitted = pl.col("disposition") == "submitted"
    wanted = ("place_key", "core_key", "region", "postcode", "source_file", "disposition")
    sent = deduped.select(c for c in wanted if c in deduped.columns).filter(submitted)
    first = sent.select("place_key")
    fresh = pl.DataFrame(schema={"place_key": pl.String})
    by_core = pl.DataFrame(schema={"place_key": pl.String, "outcome_key": pl.String})
    renamed = pl.DataFrame(schema={"place_key": pl.String})
    held = pl.DataFrame(
        schema={"place_key": pl.String, "failures_in_a_row": pl.Int64, "last_error": pl.String}
    )
    known = con is not None and bool(
        con.execute("select exists (select 1 from runs)").fetchall()[0][0]
    )
    if con is not None and known and not options.force and first.height:
        max_age = timedelta(days=options.max_age_days)
        fresh = fresh_keys(
            con, first, signature=options.signature, max_age=max_age, now=now
        ).select("place_key")
        rest = sent.filter(~pl.col("place_key").is_in(fresh["place_key"].implode()))
        by_core = fresh_by_core(con, rest, signature=options.signature, max_age=max_age, now=now)
        renamed = rekeyed(con, sent)
    if con is not None and known and not options.retry_failed and first.height:
        held = failing(con)
    is_fresh = pl.col("place_key").is_in(fresh["place_key"].implode())
    core = deduped.select("place_key").join(by_core, on="place_key", how="left")["outcome_key"]
    is_core = core.is_not_null()
    is_held = pl.col("place_key").is_in(held["place_key"].implode())
    marked = deduped.with_columns(
        pl.when(submitted & is_fresh).then(pl.lit("skipped_fresh"))
        .when(submitted & is_core).then(pl.lit("skipped_fresh"))
        .when(submitted & is_held).then(pl.lit("held_failing"))
        .otherwise(pl.col("disposition")).alias("disposition"),
        pl.coalesce(core, pl.col("place_key")).alias("outcome_key"),
    )  # fmt: skip
    held_note = pl.concat_str(
        pl.lit("failed "),
        pl.col("failures_in_a_row").cast(pl.String),
        pl.lit(" times in a row (last: "),
        pl.col("last_error").fill_null("no reason given"),
        pl.lit("); --retry-failed sends it again"),
    )
    core_note = pl.concat_str(
        pl.lit("fresh outcome of "), pl.col("outcome_key"),
        pl.lit(" (the same place before its region or postcode was filled)"),
    )  # fmt: skip
    # The held places' columns joined to the keys alone: joining them to the whole frame would
    # copy every column of every row (a million rows: some 200 MB) for a handful of places.
    failures = deduped.select("place_key").join(
        held, on="place_key", how="left", maintain_order="left"
    )
    note = (
        pl.when(pl.col("disposition") == "held_failing").then(held_note)
        .when(
            (pl.col("disposition") == "skipped_fresh")
            & (pl.col("outcome_key") != pl.col("place_key"))
        ).then(core_note)
        .otherwise(pl.col("note") if "note" in deduped.columns else None)
        .alias("note")
    )  # fmt: skip
    marked = (
        marked.with_columns(failures.get_column(c) for c in ("failures_in_a_row", "last_error"))
        .with_columns(note)
        .drop("failures_in_a_row", "last_error")
    )
    info = FreshInfo(
        candidates=first.height,
        fresh=fresh.height + by_core.height,
        fresh_by_core=by_core.height,
        held_failing=int((marked.get_column("disposition") == "held_failing").sum()),
        warnings=_rekey_warnings(sent, by_core, renamed),
    )
    return marked, info
