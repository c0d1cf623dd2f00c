"""The run_files flow end to end over real loopback HTTP, asserting on the sandbox's counts.

The tests of what the library decides (rejects, freshness, the key's balance) run the same
way through placeflow.run (`run_library`: the flow's state and summary, without Prefect)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from placeflow.state.checks import run_checks

from .conftest import ServeSandbox, places, run_flow, run_library, write_csv

flow = pytest.mark.usefixtures("prefect_api")


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


@flow
def test_job_route_multi_file_with_duplicates(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Two files sharing rows: each place sent once in one job; every row accounted for."""
    sb = serve_sandbox()
    a = write_csv(tmp_path / "a.csv", places(60))
    b = write_csv(tmp_path / "b.csv", places(40, start=40))  # 20 rows repeat a.csv's
    db = tmp_path / "wh.duckdb"
    state, s = run_flow(inputs=[str(a), str(b)], db=str(db), route="job")
    assert state == "COMPLETED" and s["status"] == "completed"
    assert (s["rows_read"], s["duplicates"], s["submitted"]) == (100, 20, 80)
    assert s["succeeded"] + s["failed"] == 80
    stats = sb.stats()
    assert stats["requests"]["POST /v1/jobs/enrich"] == {"200": 1}
    assert sum(stats["requests"]["GET /v1/jobs/{batch_id}"].values()) >= 1
    assert stats["downloads"]["served"] == 1 and stats["downloads"]["with_api_key"] == 0
    assert stats["keys"]["sk_e2e_paid_key_7a7a"]["rate_limited"] == 0
    assert stats["duplicate_submissions"] == 0
    assert s["charged"] == sb.credits()["charged"] and s["held"] == 80
    assert s["charged"] + s["released"] == s["held"]
    assert s["usage_delta"] == s["charged"] and s["ledger_vs_usage"] == 0
    rows = query(db, "select disposition, count(*) from run_rows group by all order by 1")
    assert rows == [("duplicate", 20), ("submitted", 80)]
    with duckdb.connect(str(db)) as con:
        assert all(n == 0 for n in run_checks(con).values())


@flow
def test_sync_route_for_small_work(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Twelve places go as two enrich-batch calls, charged per answered place, no job."""
    sb = serve_sandbox()
    f = write_csv(tmp_path / "small.csv", places(12))
    state, s = run_flow(inputs=[str(f)], db=str(tmp_path / "wh.duckdb"))
    assert state == "COMPLETED"
    stats = sb.stats()
    assert stats["requests"]["POST /v1/enrich-batch"] == {"200": 2}
    assert "POST /v1/jobs/enrich" not in stats["requests"]
    assert s["charged"] == sb.credits()["charged"] == s["succeeded"]


def test_validate_mode_and_rerun_costs_nothing(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """A second run of unchanged input sends nothing and is charged nothing."""
    sb = serve_sandbox()
    f = write_csv(tmp_path / "p.csv", places(50))
    db = str(tmp_path / "wh.duckdb")
    _, first = run_library(inputs=[str(f)], db=db, mode="validate")
    charged = sb.credits()["charged"]
    before = {route: sum(c.values()) for route, c in sb.stats()["requests"].items()}
    state, second = run_library(inputs=[str(f)], db=db, mode="validate")
    after = {route: sum(c.values()) for route, c in sb.stats()["requests"].items()}
    assert state == "COMPLETED" and second["submitted"] == 0
    assert second["skipped_fresh"] == first["succeeded"]
    assert sb.credits()["charged"] == charged and after == before


@flow
def test_budget_refusal_spends_nothing(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Over --max-credits the run is refused with exit code 3 and the sandbox sees no POST."""
    sb = serve_sandbox()
    f = write_csv(tmp_path / "p.csv", places(50))
    db = tmp_path / "wh.duckdb"
    state, s = run_flow(inputs=[str(f)], db=str(db), max_credits=10)
    assert state == "FAILED" and s["exit_code"] == 3 and s["status"] == "refused"
    assert "--max-credits" in s["message"]
    assert not [r for r in sb.stats()["requests"] if r.startswith("POST")]
    assert sb.credits()["charged"] == 0 and sb.credits()["held_total"] == 0
    assert query(db, "select status from runs") == [("refused",)]


@flow
@pytest.mark.slow  # the default suite keeps test_faults' job failing part way (its rows loaded)
def test_failed_job_is_recorded_and_only_its_places_are_retried(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """A job the service fails is recorded with its error, charged nothing, and retried alone."""
    sb = serve_sandbox()
    a = write_csv(tmp_path / "a.csv", places(60))
    db = tmp_path / "wh.duckdb"
    sb.sandbox.inject("JOB", "fail")
    state, first = run_flow(inputs=[str(a)], db=str(db), route="job")
    assert state == "FAILED" and first["exit_code"] == 1
    assert first["chunks_failed"] == 1 and first["not_answered"] == 60
    assert first["charged"] == 0 and sb.credits()["charged"] == 0
    ((status, error, code),) = query(db, "select status, error, error_code from jobs")
    assert status == "failed" and error and code == "EXTERNAL_API_ERROR"
    state, second = run_flow(inputs=[str(a)], db=str(db), route="job")
    assert state == "COMPLETED" and second["submitted"] == 60
    assert second["charged"] == sb.credits()["charged"] > 0
    state, third = run_flow(inputs=[str(a)], db=str(db), route="job")
    failed_rows = second["failed"]
    assert third["submitted"] == failed_rows, "only the places that failed are sent again"


@flow
def test_summary_artifact_is_published(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """The flow publishes a markdown artifact with the run's counts and credits."""
    serve_sandbox()
    f = write_csv(tmp_path / "p.csv", places(5))
    _, s = run_flow(inputs=[str(f)], db=str(tmp_path / "wh.duckdb"))
    # Prefect 3.8.8's client sends nulls its own server (with FastAPI 0.154) refuses for this
    # filter, so the test asks the REST API directly.
    body = {
        "artifacts": {"key": {"any_": ["place-refresh-summary"]}},
        "limit": 50,
        "offset": 0,
        "sort": "CREATED_DESC",
    }
    reply = httpx.post(f"{prefect_api}/artifacts/filter", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    texts = [a["data"] for a in reply.json() if a["type"] == "markdown"]
    assert any(s["run_id"] in t and "credits charged" in t for t in texts)
    from .conftest import KEY

    assert not any(KEY in t for t in texts), "the key is in a Prefect artifact"


def test_refused_when_the_key_cannot_cover_the_holds(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """A key whose available credits cannot hold the run is refused before any POST."""
    from placeflow.emulator import KeySpec

    from .conftest import KEY

    sb = serve_sandbox(keys=(KeySpec(key=KEY, credits=30),))
    f = write_csv(tmp_path / "p.csv", places(50))
    state, s = run_library(inputs=[str(f)], db=str(tmp_path / "wh.duckdb"), route="job")
    assert state == "FAILED" and s["exit_code"] == 3
    assert "30 available" in s["message"] and "add credits" in s["message"]
    assert not [r for r in sb.stats()["requests"] if r.startswith("POST")]
    assert sb.credits()["held_total"] == 0


@flow
def test_the_key_appears_nowhere(
    tmp_path: Path,
    serve_sandbox: ServeSandbox,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After a run with faults, the key's text is in no output, log, warehouse value or file."""
    from .conftest import KEY

    sb = serve_sandbox()
    sb.sandbox.inject("POST /v1/jobs/enrich", "500")
    sb.sandbox.inject("GET /files", "corrupt")
    f = write_csv(tmp_path / "p.csv", places(40))
    db = tmp_path / "wh.duckdb"
    state, s = run_flow(inputs=[str(f)], db=str(db), route="job")
    assert state == "COMPLETED"
    out, err = capfd.readouterr()
    assert KEY not in out + err + caplog.text and KEY not in str(s)
    assert sb.stats()["downloads"]["with_api_key"] == 0
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("select table_name from duckdb_tables()").fetchall()]
        for table in tables:
            dump = con.execute(f'select * from "{table}"').fetchall()
            assert KEY not in str(dump), f"the key is stored in {table}"
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".duckdb":
            data = path.read_bytes()
            assert KEY.encode() not in data, f"the key is in {path}"
            if path.suffix == ".gz":
                import gzip

                assert KEY.encode() not in gzip.decompress(data)
    assert KEY.encode() not in db.read_bytes()


@flow
def test_a_second_run_on_a_busy_database_refuses_clearly(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """While another process holds the warehouse past the run's wait, it refuses clearly."""
    import subprocess
    import sys

    sb = serve_sandbox()
    db = tmp_path / "wh.duckdb"
    duckdb.connect(str(db)).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]);"
            " print('locked', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        f = write_csv(tmp_path / "p.csv", places(5))
        state, s = run_flow(inputs=[str(f)], db=str(db), warehouse_wait=0.5)
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert state == "FAILED" and s["exit_code"] == 1
    assert str(db) in s["message"]
    assert sb.stats()["requests"] == {}, "nothing was sent"


def test_hostile_rows_are_rejected_or_kept_verbatim(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Bad rows are rejected with reasons and never sent; odd but valid strings go verbatim."""
    sb = serve_sandbox()
    kept = [
        "'; drop table runs; --",
        '=HYPERLINK("http://evil.example","x")',
        "Café 🍕 ☕",
        "مطعم الشام",
        "Robert'); DELETE FROM jobs;--",
    ]
    rows = [
        {
            "id": f"k{i}",
            "name": name,
            "address": f"{i} Main St",
            "city": "Springfield",
            "country": "US",
            "lat": "",
            "lon": "",
        }
        for i, name in enumerate(kept)
    ]
    rows += [
        {
            "id": "r1",
            "name": "x" * 201,
            "address": "1 A St",
            "city": "C",
            "country": "US",
            "lat": "",
            "lon": "",
        },
        {
            "id": "r2",
            "name": "Far North",
            "address": "",
            "city": "C",
            "country": "US",
            "lat": "95.5",
            "lon": "10",
        },
        {
            "id": "r3",
            "name": "Nowhere",
            "address": "",
            "city": "C",
            "country": "Atlantis",
            "lat": "",
            "lon": "",
        },
        {
            "id": "r4",
            "name": "N/A",
            "address": "2 B St",
            "city": "C",
            "country": "US",
            "lat": "",
            "lon": "",
        },
        {
            "id": "h1",
            "name": "Half Given",
            "address": "3 C St",
            "city": "C",
            "country": "US",
            "lat": "40.1",
            "lon": "",
        },
    ]
    f = write_csv(tmp_path / "hostile.csv", rows)
    db = tmp_path / "wh.duckdb"
    state, s = run_library(inputs=[str(f)], db=str(db))
    assert state == "COMPLETED" and s["rows_read"] == 10 and s["rejected"] == 4
    assert s["submitted"] == 6
    statuses = {code for counts in sb.stats()["requests"].values() for code in counts}
    assert statuses == {"200"}, "no request for a bad row ever reached the service"
    rejects = dict(query(db, "select source_id, reason from rejects order by source_id"))
    assert "200" in rejects["r1"] and "95.5" in rejects["r2"]
    assert "Atlantis" in rejects["r3"] and "poi_name" in rejects["r4"]
    sent = [json.loads(r) for (r,) in query(db, "select request from run_places")]
    assert sorted(p["poi_name"] for p in sent if p["poi_name"] != "Half Given") == sorted(kept)
    (note,) = query(db, "select note from run_rows where source_id = 'h1'")[0]
    assert "longitude" in note
    assert query(db, "select count(*) from runs") == [(1,)]
