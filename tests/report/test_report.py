"""The run report: aggregates checked against the warehouse, the page checked in Chromium."""

from __future__ import annotations

import argparse
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import duckdb
import pytest
from PIL import Image

from placeflow.cli.args import run_command
from placeflow.cli.report import add_parsers
from placeflow.reporting import changes_table, rejects_table, report_link, write_report
from placeflow.reporting.data import collect
from tests.report.browser import PageVisit, chromium
from tests.report.conftest import HOSTILE, Warehouse


def _cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="placeflow")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out = io.StringIO()
    with redirect_stdout(out):  # the command's own ends: --db resolved, its error said once
        code = run_command(args, args.func)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def geo_visit(warehouse: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> PageVisit:
    """The geo run's report, written by `placeflow report` and opened in Chromium."""
    workdir = tmp_path_factory.mktemp("report-browser")
    out = workdir / "report.html"
    code, _ = _cli("report", warehouse.geo_run, "--db", str(warehouse.db), "--out", str(out))
    assert code == 0
    with chromium(workdir) as browser:
        return browser.visit(out.as_uri())


def _blank(png: bytes, box: dict[str, float]) -> bool:
    image = Image.open(io.BytesIO(png)).convert("L")
    crop = image.crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]),
                       int(box["y"] + box["height"])))  # fmt: skip
    low, high = crop.getextrema()
    return bool(low == high)


def test_report_opens_offline_without_errors(geo_visit: PageVisit, warehouse: Warehouse) -> None:
    """Chromium requests nothing but the file itself, logs no error and finds no script."""
    assert geo_visit.requests == [geo_visit.requests[0]]
    assert geo_visit.requests[0].startswith("file://")
    assert geo_visit.errors == []
    assert geo_visit.scripts == 0


def test_every_chart_renders_non_empty(geo_visit: PageVisit) -> None:
    """Every SVG has a real box, drawn shapes, and ink in the browser's own screenshot."""
    names = [c["name"] for c in geo_visit.charts]
    assert names == [
        "funnel", "rejects", "status", "confidence", "verdicts", "credits", "timeline",
        "changes", "map",
    ]  # fmt: skip
    for chart in geo_visit.charts:
        assert chart["width"] > 300 and chart["height"] > 80, chart
        assert chart["shapes"] > 10, chart
        assert not _blank(geo_visit.png, chart), chart
    assert geo_visit.sections == [
        "summary", "funnel", "outcomes", "credits", "timeline", "changes", "map",
    ]  # fmt: skip


def test_aggregates_match_the_warehouse(warehouse: Warehouse) -> None:
    """Funnel, rejects, status by country, jobs and map points agree with the raw tables."""
    with duckdb.connect(str(warehouse.db), read_only=True) as con:
        data = collect(con, warehouse.geo_run)
        outcomes = con.execute(
            "select count(*) from enrichments where run_id = ?", [warehouse.geo_run]
        ).fetchone()
        rejected = con.execute(
            "select count(*) from rejects where run_id = ?", [warehouse.geo_run]
        ).fetchone()
        held = con.execute(
            "select sum(credits) from credit_ledger where run_id = ? and kind = 'hold'",
            [warehouse.geo_run],
        ).fetchone()
        reasons = rejects_table(con, warehouse.geo_run)
        changes = changes_table(con, warehouse.geo_run)
    assert outcomes and rejected and held
    assert data.run["rows_read"] == 126 and data.run["rejected"] == rejected[0] == 6
    assert sum(r["rows"] for r in reasons) == 6
    assert {r["field"] for r in reasons} == {"poi_name", "latitude"}
    assert sum(int(r["places"]) for r in data.outcomes) == outcomes[0] == 120
    assert data.countries[:3] == ["DE", "FR", "US"]
    assert sum(int(j["held"]) for j in data.jobs) == held[0]
    assert data.located == 120 and len(data.points) == 120
    assert {c["kind"]: c["changes"] for c in data.changes} == {"closed": 4, "phone": 3, "moved": 2}
    assert len(changes) == warehouse.changes


def test_user_text_is_escaped(warehouse: Warehouse, tmp_path: Path) -> None:
    """A place named with markup appears as text in the changes table, never as markup."""
    with duckdb.connect(str(warehouse.db), read_only=True) as con:
        info = write_report(con, warehouse.geo_run, tmp_path / "r.html")
    page = info.path.read_text(encoding="utf-8")
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Café &amp; &lt;b&gt;Bar" in page
    assert "<script" not in page


def test_sample_report_leaves_out_what_the_run_lacks(warehouse: Warehouse, tmp_path: Path) -> None:
    """The sample run (no coordinates, no changes) gets no map and no changes section."""
    out = tmp_path / "sample.html"
    code, printed = _cli(
        "report", warehouse.sample_run, "--db", str(warehouse.db), "--out", str(out), "--json"
    )
    info = json.loads(printed)
    assert code == 0 and info["path"] == str(out)
    assert info["sections"] == ["summary", "funnel", "outcomes", "credits", "timeline"]
    assert 0 < out.stat().st_size == info["bytes"] < 5_000_000
    assert out.read_text(encoding="utf-8").count('<svg class="chart"') == 7


def test_report_of_an_unknown_run_is_a_usage_error(warehouse: Warehouse, tmp_path: Path) -> None:
    """An unknown run id or a missing warehouse exits 2 and writes nothing."""
    out = tmp_path / "none.html"
    assert _cli("report", "run_nope", "--db", str(warehouse.db), "--out", str(out))[0] == 2
    assert _cli("report", "run_nope", "--db", str(tmp_path / "no.duckdb"))[0] == 2
    assert not out.exists()


def test_runs_lists_what_an_analyst_looks_for(warehouse: Warehouse, tmp_path: Path) -> None:
    """`runs --json` is one JSON list, newest first, with status, rows, credits, duration
    and changes; the text table names both runs."""
    code, printed = _cli("runs", "--db", str(warehouse.db), "--json")
    runs = json.loads(printed)
    assert code == 0
    assert [r["run_id"] for r in runs] == [warehouse.geo_run, warehouse.sample_run]
    geo, sample = runs
    assert geo["status"] == "completed" and geo["rows_read"] == 126
    assert geo["changes"] == warehouse.changes and sample["changes"] == 0
    assert sample["credits_charged"] == sample["usage_delta"] > 0
    assert sample["duration_s"] >= 0
    code, text = _cli("runs", "--db", str(warehouse.db), "--limit", "1")
    assert warehouse.geo_run in text and warehouse.sample_run not in text
    assert _cli("runs", "--db", str(tmp_path / "none.duckdb"), "--json") == (0, "[]\n")


def test_report_link_points_at_the_file(tmp_path: Path) -> None:
    """The link artifact's URL is the report's absolute file:// address."""
    link = report_link(tmp_path / "r.html", "run_x")
    assert link["link"] == (tmp_path / "r.html").resolve().as_uri()
    assert "run_x" in link["link_text"]


def test_server_text_with_control_and_bidi_characters_is_shown_inert(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """A server's NUL, escape and right-to-left override (in the run's message, a chunk's error
    and a changed value) reach the page as U+FFFD, as on a terminal (`printable`), never raw."""
    import shutil

    db = tmp_path / "copy.duckdb"
    shutil.copy(warehouse.db, db)
    hostile = "job said: \x00\x1b[31mred\u202etxt.exe\u2066"
    with duckdb.connect(str(db)) as con:
        con.execute("update runs set message = ? where run_id = ?", [hostile, warehouse.geo_run])
        con.execute("update jobs set error = ? where run_id = ?", [hostile, warehouse.geo_run])
        con.execute(
            "update place_changes set new_value = ? where run_id = ?", [hostile, warehouse.geo_run]
        )
    with duckdb.connect(str(db), read_only=True) as con:
        info = write_report(con, warehouse.geo_run, tmp_path / "r.html")
    page = info.path.read_text(encoding="utf-8")
    assert "job said: \ufffd\ufffd[31mred\ufffdtxt.exe\ufffd" in page
    for raw in ("\x00", "\x1b", "\u202e", "\u2066"):
        assert raw not in page
