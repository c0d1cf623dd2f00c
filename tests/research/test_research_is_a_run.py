"""Research is a run like any other (issue 36): one runs table, one credit ledger that equals
what the sandbox billed for runs and research together, a research run's report, rows and
export, and refresh or research --from-warehouse on a warehouse of research runs only."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb

from placeflow.exporters.export import export
from placeflow.fields import RateLimits
from placeflow.reporting.rows import row_outcomes
from placeflow.runner.refresh import WarehouseSource, refresh
from placeflow.runner.research import ResearchOptions, read_options, research
from placeflow.runner.target import Target
from placeflow.state.checks import check_names, run_checks
from placeflow.support.redact import Secret
from tests.report.test_report import _cli

from .conftest import KEY, SCALE, Served, ServeSandbox, places, spec, write_csv
from .test_from_warehouse import loaded_warehouse

PER_ROW = 4  # 3 fields + identity


def _one(db: Path, query: str) -> Any:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(query).fetchall()[0][0]


def _ledger_total(db: Path) -> int:
    """What the ledger says the service billed: charges and adjustments, of every run."""
    return int(
        _one(
            db,
            "select coalesce(sum(credits), 0) from credit_ledger"
            " where kind in ('charge', 'adjustment')",
        )
    )


def test_runs_and_research_share_one_runs_table_and_one_ledger_the_sandbox_agrees_with(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """A run of files then a research run on one warehouse and key: both are rows of runs,
    `runs --json` lists both, the ledger's charges (both runs') are what the sandbox billed in
    all, each run's ledger explains its usage delta, and every check passes."""
    sb = serve(fail_rate=0.0)
    db, _ = loaded_warehouse(tmp_path, sb, 6)
    run_billed = sb.credits()["charged"]
    csv = write_csv(tmp_path / "p.csv", places(10, start=100) + places(2, start=100))
    out, code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert out.status == "completed" and out.charged == 10 * PER_ROW, out
    assert sb.credits()["charged"] == run_billed + 10 * PER_ROW
    assert _ledger_total(db) == sb.credits()["charged"]
    code, printed = _cli("runs", "--db", str(db), "--json")
    listed = {r["run_id"]: r for r in json.loads(printed)}
    assert code == 0 and len(listed) == 2
    mine = listed[out.run_id]
    assert mine["mode"] == "research" and mine["status"] == "completed"
    assert mine["credits_charged"] == mine["usage_delta"] == 10 * PER_ROW
    assert mine["submitted"] == 10 and mine["duplicates"] == 2 and mine["succeeded"] == 10
    with duckdb.connect(str(db), read_only=True) as con:
        modes = con.execute("select mode, count(*) from runs group by mode order by mode")
        assert modes.fetchall() == [("enrich", 1), ("research", 1)]
        gaps = con.execute("select run_id, ledger_vs_usage from run_credits").fetchall()
        assert {gap for _, gap in gaps} == {0}
        assert run_checks(con) == dict.fromkeys(check_names(), 0)


def test_a_research_run_has_its_report_its_rows_and_its_export(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """`report RR` draws the answers by status and by confidence and the credits per request;
    `rows RR` gives every input row with its place's fields and the input's own columns; an
    export carries the run's rows in the crosswalk and its answers in research_latest."""
    sb = serve(fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    unnamed = {"id": "u_x", "name": "", "address": "", "city": "", "country": "USA"}
    csv = write_csv(tmp_path / "p.csv", [*places(8), unnamed, *places(1)])
    out, _code = sb.run(csv, db, ResearchOptions(spec=spec()))
    run_id = out.run_id
    assert out.status == "completed" and out.rejected == 1 and out.duplicates == 1
    assert out.chunks_failed == 0
    page = tmp_path / "report.html"
    assert _cli("report", run_id, "--db", str(db), "--out", str(page))[0] == 0
    html = page.read_text()
    for shown in ('id="answers"', "By field status", "By confidence", "Per request"):
        assert shown in html, shown
    assert html.count("<svg") >= 5  # funnel, two answer charts, credits, per request, timeline
    rows = row_outcomes(db, run_id)
    assert rows.height == 10
    kept = rows.filter(rows["disposition"] != "rejected")
    assert kept.height == 9 and kept["poi_name"].null_count() == 0
    assert set(kept["city"]) == {"Springfield"} and kept["name"].null_count() == 0
    dest = tmp_path / "export"
    export(db, str(dest))
    with duckdb.connect() as con:
        crosswalk = con.execute(
            f"select count(*) from read_parquet('{dest}/crosswalk/*/*.parquet') where run_id = ?",
            [run_id],
        ).fetchall()[0][0]
        latest = con.execute(
            f"select count(*) from read_parquet('{dest}/research_latest/*/*.parquet')"
        ).fetchall()[0][0]
    assert crosswalk == 10 and latest == 8 * 3


def _target(sb: Served) -> Target:
    return Target(
        base_url=sb.base_url, api_key=Secret(KEY), label="sandbox",
        limits=RateLimits.for_tier("paid", window_scale=SCALE),
    )  # fmt: skip


def test_refresh_and_from_warehouse_on_a_warehouse_of_research_runs_only(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """A warehouse whose only run is a research run: research --from-warehouse of another
    field researches its places, refresh validates them (neither fails to bind its query),
    and the one ledger is still what the sandbox billed."""
    sb = serve(fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    first, _first_code = sb.run(
        write_csv(tmp_path / "p.csv", places(5)), db, ResearchOptions(spec=spec())
    )
    assert first.status == "completed", first
    again = research(
        WarehouseSource(db, older_than=timedelta(0)),
        ResearchOptions(spec=spec(fields=("vegan:bool",), verify=False)),
        target=sb.target(), db=db, sleep=lambda s: None,
    )  # fmt: skip
    assert again.status == "completed" and again.submitted == 5, again
    assert again.charged == 5
    summary = refresh(db=db, older_than="0", target=_target(sb), mode="validate")
    assert summary.status == "completed" and summary.submitted == 5, summary
    assert _ledger_total(db) == sb.credits()["charged"] == 5 * PER_ROW + 5 + summary.charged


def test_a_refused_research_run_reports_no_failed_chunk(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Refused by --max-credits: nothing sent, and its summary and its report say no chunk
    (request) failed; the requests it planned are there, unsent."""
    sb = serve()
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "p.csv", places(25))
    out, code = sb.run(csv, db, ResearchOptions(spec=spec(), run=read_options(max_credits=10)))
    assert out.status == "refused" and code == 3, out
    assert out.chunks_failed == 0 and out.chunks == out.research.requests_open == 3
    assert sb.requests("POST /v1/deep-research") == 0
    page = tmp_path / "report.html"
    assert _cli("report", out.run_id, "--db", str(db), "--out", str(page))[0] == 0
    assert "No answers were loaded for this run." in page.read_text()


def test_a_possible_charge_the_service_billed_is_adjusted_to_its_usage(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """An answer lost (billed per the usage: a charge), resent by --resend-uncertain and lost
    again on a key said shared (the usage cannot tell: held as possibly billed), then bought:
    once the run completes, the one ledger's charges and its adjustment are what the sandbox
    billed, each entry its own ref, and no check sees a double charge or an unexplained
    usage."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(10)), tmp_path / "wh.duckdb"

    def lose(moment: str, sent: int) -> None:
        if moment == "sent":
            sb.sandbox.inject("POST /v1/deep-research", "drop_response")

    first, first_code = sb.run(csv, db, ResearchOptions(spec=spec()), hook=lose)
    shared = ResearchOptions(
        spec=spec(), run=read_options(resend_uncertain=True), exclusive_key=False
    )
    again, again_code = sb.run(csv, db, shared, hook=lose)
    assert first_code == again_code == 1, (first, again)
    assert again.possible_extra_credits == 10 * PER_ROW
    last, last_code = sb.run(
        csv, db, ResearchOptions(spec=spec(), run=read_options(resend_uncertain=True))
    )
    assert last_code == 0 and last.status == "completed", last
    assert last.charged == 2 * 10 * PER_ROW and last.adjustment == 10 * PER_ROW
    assert last.ledger_vs_usage == 0 and "possibly billed" in last.message
    assert _ledger_total(db) == sb.credits()["charged"] == 3 * 10 * PER_ROW
    with duckdb.connect(str(db), read_only=True) as con:
        entries = con.execute("select ref, kind from credit_ledger").fetchall()
        assert len(entries) == len(set(entries)) == 4  # charge, possible, charge, adjustment
        kept = con.execute("select message from runs where run_id = ?", [last.run_id])
        assert "possibly billed" in kept.fetchall()[0][0]
        checks = run_checks(con)
        assert checks["ledger_double_charge"] == checks["usage_delta_unexplained"] == 0
