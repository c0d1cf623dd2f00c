"""The place_refresh flow end to end over real loopback HTTP, asserting on the sandbox's counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.warehouse import run_checks

from .conftest import ServeSandbox, places, write_csv

pytestmark = pytest.mark.usefixtures("prefect_api")


def run(**params: Any) -> tuple[str, dict[str, Any]]:
    from flows.place_refresh import place_refresh

    state = place_refresh(**params, return_state=True)
    data = state.result(raise_on_failure=False)
    assert isinstance(data, dict), data
    return str(state.type.value), data


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_job_route_multi_file_with_duplicates(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Two files sharing rows: each place sent once in one job; every row accounted for."""
    sb = serve_sandbox()
    a = write_csv(tmp_path / "a.csv", places(60))
    b = write_csv(tmp_path / "b.csv", places(40, start=40))  # 20 rows repeat a.csv's
    db = tmp_path / "wh.duckdb"
    state, s = run(inputs=[str(a), str(b)], db=str(db), route="job")
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


def test_sync_route_for_small_work(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Twelve places go as two enrich-batch calls, charged per answered place, no job."""
    sb = serve_sandbox()
    f = write_csv(tmp_path / "small.csv", places(12))
    state, s = run(inputs=[str(f)], db=str(tmp_path / "wh.duckdb"))
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
    _, first = run(inputs=[str(f)], db=db, mode="validate")
    charged = sb.credits()["charged"]
    before = {route: sum(c.values()) for route, c in sb.stats()["requests"].items()}
    state, second = run(inputs=[str(f)], db=db, mode="validate")
    after = {route: sum(c.values()) for route, c in sb.stats()["requests"].items()}
    assert state == "COMPLETED" and second["submitted"] == 0
    assert second["skipped_fresh"] == first["succeeded"]
    assert sb.credits()["charged"] == charged and after == before


def test_budget_refusal_spends_nothing(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Over --max-credits the run is refused with exit code 3 and the sandbox sees no POST."""
    sb = serve_sandbox()
    f = write_csv(tmp_path / "p.csv", places(50))
    db = tmp_path / "wh.duckdb"
    state, s = run(inputs=[str(f)], db=str(db), max_credits=10)
    assert state == "FAILED" and s["exit_code"] == 3 and s["status"] == "refused"
    assert "--max-credits" in s["message"]
    assert not [r for r in sb.stats()["requests"] if r.startswith("POST")]
    assert sb.credits()["charged"] == 0 and sb.credits()["held_total"] == 0
    assert query(db, "select status from runs") == [("refused",)]
