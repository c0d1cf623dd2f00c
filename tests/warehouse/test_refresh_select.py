"""select_stale: which known places a refresh re-checks, and in which order within a budget."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest

from placeflow.options import RunOptions
from placeflow.runner.refresh import WarehouseSource, select_stale
from placeflow.store.warehouse import connect, sql_text
from tests.warehouse.sandbox_runs import Runs, run_places, sample_head

T0 = datetime(2026, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
ENRICH = "enrich|opening_hours,phone,website,existence,open_closed|no-summary"
VALIDATE = "validate||no-summary"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """All samples enriched at epoch 0; 40 days later the first 100 records re-enriched at
    epoch 1 (each run records its changes itself)."""
    work = tmp_path_factory.mktemp("stale")
    db = work / "wh.duckdb"
    ids = {
        "r1": run_places(db, epoch=0, now=T0),
        "r2": run_places(
            db, epoch=1, now=T0 + 40 * DAY, inputs=[sample_head(work / "head.csv", 100)]
        ),
    }
    con = connect(db)
    yield Runs(con, ids)
    con.close()


def _answered(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[datetime | None, datetime]]:
    """place_key -> (last successful outcome, last attempt)."""
    rows = con.execute(
        "select place_key, max(outcome_at) filter (where success), max(outcome_at)"
        " from place_outcomes group by place_key"
    ).fetchall()
    return {str(k): (t, a) for k, t, a in rows}


def test_stale_places_are_those_answered_before_the_cutoff(warehouse: Runs) -> None:
    """older_than 30 days at day 45 selects every place not re-answered by r2 (never answered
    first, then oldest); older_than 0 selects them all; right after r2, none of r2's is due."""
    con = warehouse.con
    now = T0 + 45 * DAY
    answered = _answered(con)
    stale = select_stale(con, older_than=30 * DAY, mode="enrich", signature=ENRICH, now=now)
    cutoff = now - 30 * DAY
    expected = {k for k, (t, a) in answered.items() if (t is None or t <= cutoff) and a <= cutoff}
    assert set(stale["place_key"]) == expected
    never = stale["answered_at"].null_count()
    assert never > 0 and stale["answered_at"].head(never).is_null().all()
    assert stale["answered_at"].tail(stale.height - never).is_sorted()
    everything = select_stale(
        con, older_than=timedelta(0), mode="enrich", signature=ENRICH, now=now
    )
    assert everything.height == len(answered)
    after = select_stale(
        con, older_than=DAY, mode="enrich", signature=ENRICH, now=T0 + 40 * DAY + timedelta(hours=1)
    )
    assert set(after["place_key"]) == {k for k, (_, a) in answered.items() if a == T0}


def test_each_place_comes_with_its_stored_request(warehouse: Runs) -> None:
    """The request is the latest run's stored one, rebuilt for the chosen mode; no CSV needed."""
    stale = select_stale(
        warehouse.con,
        older_than=timedelta(0),
        mode="validate",
        signature=VALIDATE,
        now=T0 + 45 * DAY,
        limit=5,
    )
    assert stale.height == 5
    stored = dict(
        warehouse.con.execute(
            "select place_key, request from run_places where run_id = ?", [warehouse.ids["r1"]]
        ).fetchall()
    )
    for row in stale.iter_rows(named=True):
        sent = json.loads(stored[row["place_key"]])
        request = json.loads(row["request"])
        assert "attributes" not in request
        assert request == {k: v for k, v in sent.items() if k != "attributes"}
        assert row["poi_name"] == sent["poi_name"] and row["city"] == sent["city"]


def test_an_enrichment_answers_a_validation(warehouse: Runs) -> None:
    """A validate refresh counts the enrichments' answers: r2's places are not stale at 30 days."""
    stale = select_stale(
        warehouse.con, older_than=30 * DAY, mode="validate", signature=VALIDATE, now=T0 + 45 * DAY
    )
    r2 = {
        str(k)
        for (k,) in warehouse.con.execute(
            "select place_key from run_places where run_id = ?", [warehouse.ids["r2"]]
        ).fetchall()
    }
    assert len(r2) == 100 and stale.height > 0
    assert not set(stale["place_key"]) & r2


def test_a_budget_takes_the_likeliest_changes_first(warehouse: Runs) -> None:
    """With a budget smaller than the stale set: at most budget places, by priority, each with
    its reason; places that changed before and unknown verdicts outrank plain old answers."""
    con = warehouse.con
    now = T0 + 100 * DAY
    every = select_stale(con, older_than=timedelta(0), mode="enrich", signature=ENRICH, now=now)
    chosen = select_stale(
        con, older_than=timedelta(0), mode="enrich", signature=ENRICH, now=now, budget=30
    )
    assert chosen.height == 30
    assert chosen["priority"].is_sorted(descending=True)
    priorities: list[float] = every["priority"].sort(descending=True).to_list()
    assert min(chosen["priority"].to_list()) >= priorities[29]
    assert all(chosen["reason"].to_list())
    changed = every.filter(pl.col("changes_before") > 0)
    assert changed.height > 0
    plain = every.filter(
        (pl.col("changes_before") == 0)
        & (pl.col("operational_status") == "open")
        & (pl.col("existence_confidence") >= 0.6)
        & pl.col("answered_run_id").eq(warehouse.ids["r2"])
    )
    assert min(changed["priority"].to_list()) > max(plain["priority"].to_list())
    assert (
        select_stale(
            con,
            older_than=timedelta(0),
            mode="enrich",
            signature=ENRICH,
            now=now,
            budget=30,
            credits_per_place=3,
        ).height
        == 10
    )


def test_failing_places_are_found(warehouse: Runs) -> None:
    """failing_places lists the places that failed in both of their runs and never succeeded."""
    rows = warehouse.con.execute(sql_text("queries/failing_places"), {"failures": 2}).fetchall()
    expected = warehouse.con.execute(
        "select place_key from place_outcomes group by place_key"
        " having count(*) = 2 and not bool_or(success)"
    ).fetchall()
    assert rows and {r[0] for r in rows} == {r[0] for r in expected}
    assert all(r[1] == 2 for r in rows)


def test_a_refresh_cut_short_says_how_many_stale_places_wait(warehouse: Runs) -> None:
    """A budget or a limit smaller than the stale set: the read stage's warning says how many
    stale places are left for a later refresh, why, and which went first; none when all go."""
    con = warehouse.con
    (path,) = con.execute(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchall()[0]
    now = T0 + 100 * DAY
    every = select_stale(con, older_than=timedelta(0), mode="enrich", signature=ENRICH, now=now)
    n = every.height
    assert n > 30

    def read(**cut: int) -> tuple[pl.DataFrame, tuple[str, ...]]:
        source = WarehouseSource(path, older_than=timedelta(0), clock=lambda: now, **cut)
        rows, info = source.rows(RunOptions())
        return rows, info.warnings

    rows, warnings = read(budget=30)
    assert rows.height == 30
    assert warnings == (
        f"{n - 30:,} of {n:,} stale places are left for a later refresh (--max-credits 30 buys"
        " 30; the places most likely to have changed went first)",
    )
    rows, warnings = read(budget=90, credits_per_place=3)
    assert rows.height == 30 and "(--max-credits 90 buys 30;" in warnings[0]
    rows, warnings = read(limit=10)
    assert rows.height == 10
    assert warnings == (
        f"{n - 10:,} of {n:,} stale places are left for a later refresh (--limit 10; the oldest"
        " answers went first)",
    )
    rows, warnings = read(budget=n)
    assert rows.height == n and warnings == ()


def test_a_country_no_place_is_in_is_said(warehouse: Runs) -> None:
    """--country that no known place has selects nothing, and the warning says so, with how
    many places the warehouse knows and how many of them have no country."""
    con = warehouse.con
    (path,) = con.execute(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchall()[0]
    requests = con.execute("select place_key, request from run_places").fetchall()
    countries = {key: json.loads(request).get("country") for key, request in requests}
    without = sum(1 for c in countries.values() if c is None)
    source = WarehouseSource(path, older_than=timedelta(0), country="ZZ", clock=lambda: T0)
    rows, info = source.rows(RunOptions())
    assert rows.height == 0
    assert info.warnings == (
        f"no place the warehouse knows is in country 'ZZ' ({len(countries):,} places;"
        f" {without:,} of them without a country)",
    )
    everywhere = WarehouseSource(path, older_than=timedelta(0), clock=lambda: T0)
    assert not any("no place" in w for w in everywhere.rows(RunOptions())[1].warnings)


def test_the_warehouses_places_stream_without_phone_or_website(warehouse: Runs) -> None:
    """A refresh reads places the warehouse stored (their requests: no phone, no website) as a
    stream of read frames, those two columns null, for the stages after."""
    con = warehouse.con
    (path,) = con.execute(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchall()[0]
    source = WarehouseSource(path, older_than=timedelta(0), clock=lambda: T0)
    frames = list(source.batches(RunOptions(), 100))
    assert sum(f.height for f in frames) > 100
    for frame in frames:
        assert frame.get_column("phone").null_count() == frame.height
        assert frame.get_column("website").null_count() == frame.height


def test_a_warehouse_without_runs_selects_nothing_and_does_not_fail_to_bind() -> None:
    """No row in runs (DuckDB 2.0's statistics then prove every outcome's signature null):
    the selection is empty, with its columns, for each mode, instead of a binder error."""
    con = connect(":memory:")
    now = datetime.now(UTC)
    for mode, signature in (("validate", "validate||"), ("enrich", "enrich|existence|")):
        found = select_stale(con, older_than=timedelta(0), mode=mode, signature=signature, now=now)
        assert found.height == 0 and "request" in found.columns
    assert con.execute("select current_setting('disabled_optimizers')").fetchall() == [("",)]
    con.close()
