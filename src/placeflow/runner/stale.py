"""Which known places a refresh re-checks: stale ones, oldest first, or most likely changed first.

The input of a refresh is the warehouse: every place some run sent, with the exact request of
its latest run (run_places.request), so no file is needed. A place is stale when its newest
successful outcome answering the refresh's request (sql/views/signature_answers.sql: an enrich
answers a validate and an enrich of fewer attributes) is `older_than` old or older, or when no
such outcome exists, and no attempt of that kind (a failed one included) was made since: a
place that failed within the window waits for `--retry-failed` (sql/queries/failing_places.sql)
or a smaller `older_than`. The SQL is sql/queries/stale_places.sql.

`WarehouseSource` is that selection as a run's input (`placeflow.runner.refresh` runs it):
each stale place's stored fields as the read stage's text, its place_key as the row's id.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl

from placeflow.errors import OptionsError
from placeflow.fields import PLACE_FIELDS
from placeflow.options import RunOptions
from placeflow.pipeline.read import ReadInfo, ReadStream
from placeflow.state.runstate import Clock, utc_now
from placeflow.store.warehouse import reading, settings, sql_text
from placeflow.support.arrow import fetched


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
        raise OptionsError("now must be timezone-aware (datetime.now(UTC))")
    if older_than < timedelta(0):
        raise OptionsError("older_than must not be negative")
    if signature.split("|", 1)[0] != mode:
        raise OptionsError(f"signature {signature!r} is not of mode {mode!r}")
    if limit is not None and limit < 0:
        raise OptionsError("limit must be 0 or more")
    if budget is not None and budget < 0:
        raise OptionsError("budget must be 0 or more")
    if credits_per_place < 1:
        raise OptionsError("credits_per_place must be 1 or more")
    params = {"signature": signature, "cutoff": now - older_than, "country": country, "now": now}
    stale = _stale_places(con, params)
    return choose(stale, limit=limit, budget=budget, credits_per_place=credits_per_place)


def _stale_places(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> pl.DataFrame:
    """sql/queries/stale_places.sql's rows. On a warehouse without a row in runs (none yet, or
    only research runs, read before migration 017 moved them there) DuckDB 2.0's statistics
    prove every outcome's signature null and its optimizer then fails to rebind
    signature_answers ("BindBuiltinScalarFunction did not return a BoundFunctionExpression"):
    there the query is planned without statistics propagation; elsewhere as it always was."""
    query = sql_text("queries/stale_places")
    if con.execute("select exists (select 1 from runs)").fetchall()[0][0]:  # all: none left
        found: pl.DataFrame = fetched(con.sql(query, params=params))
        return found
    with settings(con, disabled_optimizers="statistics_propagation"):
        found = fetched(con.sql(query, params=params))
    return found


def choose(
    stale: pl.DataFrame, *, limit: int | None, budget: int | None, credits_per_place: int
) -> pl.DataFrame:
    """The stale places (sql/queries/stale_places.sql's rows) a refresh sends, in sending
    order: see `select_stale`."""
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


def _unclaimed(stale: pl.DataFrame) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """The stale places no unfinished run is buying now, and what was left to which run."""
    if "claimed_by" not in stale.columns:
        return stale, ()
    claimed = stale.filter(pl.col("claimed_by").is_not_null())
    if not claimed.height:
        return stale.drop("claimed_by"), ()
    owners = claimed.group_by("claimed_by").len().sort("claimed_by").iter_rows()
    said = ", ".join(f"{run_id} ({n:,})" for run_id, n in owners)
    note = (
        f"{claimed.height:,} stale place(s) are being bought by unfinished run(s) {said}:"
        " left to them, not bought again"
    )
    return stale.filter(pl.col("claimed_by").is_null()).drop("claimed_by"), (note,)


# --- the warehouse as a run's source ----------------------------------------------------------


class WarehouseSource:
    """The stale places of a warehouse as a run's input (the `Source` protocol).

    `rows` selects them (`select_stale`, for the run's mode and signature; most likely changed
    first when `budget` cuts the set) and yields each one's stored fields as the read stage's
    text, its place_key as the row's id. A plain class, so a Prefect task passes it as is.
    """

    def __init__(
        self,
        db: Path | str,
        *,
        older_than: timedelta,
        country: str | None = None,
        limit: int | None = None,
        budget: int | None = None,
        credits_per_place: int = 1,
        clock: Clock = utc_now,
        budget_said: str | None = None,
    ) -> None:
        self.db = Path(db)
        self.budget_said = budget_said
        """The warehouse budget `budget` is what is left of (None: `--max-credits`)."""
        self.older_than = older_than
        self.country = country.upper() if country else None
        self.limit = limit
        self.budget = budget
        self.credits_per_place = credits_per_place
        self.clock = clock
        self.selected: pl.DataFrame | None = None
        """The last selection (select_stale's columns: priority and reason included)."""
        self.stale_found = 0
        """How many stale places the last selection found, those other runs are buying too."""
        self._looked: tuple[pl.DataFrame, ReadInfo] | None = None

    def look(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
        """The selection, kept for the run's read of it (one query of the warehouse, not two)."""
        self._looked = None
        self._looked = self.rows(options)
        return self._looked

    @property
    def name(self) -> str:
        return f"warehouse:{self.db.resolve()}"

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.name,)

    @property
    def keys_given(self) -> bool:
        """Each row's source_id is the place's key in the warehouse: kept, never made anew."""
        return True

    def identity(self) -> list[str]:
        """The warehouse and the selection's terms (not the places found: an unfinished
        refresh of the same terms is resumed, never sent again)."""
        return [
            self.name,
            f"older_than={self.older_than.total_seconds():g}s|country={self.country}"
            f"|limit={self.limit}|budget={self.budget}|per_place={self.credits_per_place}",
        ]

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
        if self._looked is not None:  # the refresh's own look before the run: not done twice
            looked, self._looked = self._looked, None
            return looked
        with reading(self.db, wait=options.warehouse_wait) as con:  # another run may write
            found = select_stale(
                con,
                older_than=self.older_than,
                mode=options.mode,
                signature=options.signature,
                country=self.country,
                now=self.clock(),
            )
            unknown = () if found.height else self._no_country(con)
        self.stale_found = found.height
        every, claimed = _unclaimed(found)
        stale = choose(
            every, limit=self.limit, budget=self.budget, credits_per_place=self.credits_per_place
        )
        self.selected = stale
        ordinal = pl.int_range(pl.len(), dtype=pl.Int64)
        frame = stale.select(
            ordinal.alias("row_ord"),
            pl.lit(self.name, pl.String).alias("source_file"),
            (ordinal + 1).alias("source_row"),
            pl.col("place_key").alias("source_id"),
            *[pl.col(f).cast(pl.String).alias(f) for f in PLACE_FIELDS],
            pl.lit(None, pl.String).alias("read_error"),
        )
        info = ReadInfo(
            files=(self.name,),
            rows=frame.height,
            columns={self.name: {f: f"run_places.request.{f}" for f in PLACE_FIELDS}},
            rows_per_file={self.name: frame.height},
            warnings=claimed + self._left(every.height, stale.height) + unknown,
        )
        return frame, info

    def _no_country(self, con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
        """Why --country selected nothing, when no place the warehouse knows is in it (the
        places of a run still being opened, run_openings, are not known yet)."""
        if self.country is None:
            return ()
        known, of_country, without = con.execute(
            "select count(distinct place_key),"
            " count(distinct place_key) filter (upper(request ->> 'country') = upper(?)),"
            " count(distinct place_key) filter (request ->> 'country' is null) from run_places"
            " anti join run_openings on run_places.run_id = run_openings.run_id",
            [self.country],
        ).fetchall()[0]
        if of_country:
            return ()
        return (
            f"no place the warehouse knows is in country {self.country!r} ({known:,} places;"
            f" {without:,} of them without a country)",
        )

    def _left(self, stale: int, chosen: int) -> tuple[str, ...]:
        """What a refresh that re-checks only some of the stale places leaves for the next."""
        if chosen == stale:
            return ()
        cap = None if self.budget is None else self.budget // self.credits_per_place
        by_budget = cap is not None and cap < stale  # then the likeliest changed go first
        given = self.budget_said or "--max-credits"
        said = f"{self.budget_said} has {self.budget:,} left" if self.budget_said else ""
        why = (
            (f"{said}, buying {cap:,}" if said else f"{given} {self.budget:,} buys {cap:,}")
            if by_budget and cap == chosen
            else f"--limit {self.limit:,}"
        )
        first = "the places most likely to have changed" if by_budget else "the oldest answers"
        return (
            f"{stale - chosen:,} of {stale:,} stale places are left for a later refresh ({why};"
            f" {first} went first)",
        )

    def batches(self, options: RunOptions, batch_rows: int) -> ReadStream:
        """The rows (a small frame) as a stream."""
        return ReadStream.whole(*self.rows(options), batch_rows)


__all__ = ["WarehouseSource", "choose", "select_stale"]
