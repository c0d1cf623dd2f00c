"""The fault matrix: each failure mode of the sandbox alone, and all together, under a full run.

Whatever the service does, a run finishes, or stops with a clear message where it cannot;
every input row has a disposition; nothing is charged twice; the warehouse checks are clean.
Most scenarios are marked slow (`pytest -m slow`); a fast subset runs in every suite. Each
failure mode alone is the library's to survive, so those runs go through placeflow.run (no
Prefect); every fault together, credits running out and resumed, and the queued job at the
timeout run under the run_files flow (its task retries, Failed states and resume).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.emulator import FaultConfig, KeySpec
from placeflow.state.checks import run_checks

from .conftest import KEY, ServeSandbox, places, run_flow, run_library, write_csv

flow = pytest.mark.usefixtures("prefect_api")
slow = pytest.mark.slow
ALL_TOGETHER = {
    "error_500_rate": 0.05,
    "error_503_rate": 0.05,
    "maintenance_rate": 0.03,
    "extra_429_rate": 0.05,
    "drop_request_rate": 0.03,
    "drop_response_rate": 0.05,
    "slow_rate": 0.05,
    "slow_seconds": 0.3,
    "truncate_download_rate": 0.3,
    "corrupt_download_rate": 0.3,
    "job_fail_rate": 0.15,
}
SCENARIOS = [
    pytest.param({"error_500_rate": 0.25}, id="500s", marks=slow),
    pytest.param({"error_503_rate": 0.25}, id="503s", marks=slow),
    pytest.param({"maintenance_rate": 0.2}, id="maintenance", marks=slow),
    pytest.param({"extra_429_rate": 0.3}, id="429-storm", marks=slow),
    pytest.param({"drop_request_rate": 0.2}, id="dropped-requests", marks=slow),
    pytest.param({"drop_response_rate": 0.25}, id="dropped-responses"),
    pytest.param({"slow_rate": 0.4, "slow_seconds": 0.3}, id="slow-responses", marks=slow),
    pytest.param({"truncate_download_rate": 1.0}, id="truncated-downloads", marks=slow),
    pytest.param({"corrupt_download_rate": 1.0}, id="corrupted-downloads"),
    pytest.param({"expire_url_rate": 1.0}, id="expired-urls", marks=slow),
    pytest.param({"job_fail_rate": 0.5}, id="failed-jobs", marks=slow),
]


def assert_sound(db: Path, stats: dict[str, Any], summary: dict[str, Any], rows: int) -> None:
    """Every row accounted for, nothing charged twice, ledger equal to the sandbox's charges."""
    key = stats["keys"][KEY]
    assert key["double_charged_refs"] == [] and stats["duplicate_submissions"] == 0
    assert key["credits"]["charged"] == summary["charged"]
    assert stats["downloads"]["with_api_key"] == 0
    assert stats["internal_errors"] == 0
    with duckdb.connect(str(db)) as con:
        failing = {name: n for name, n in run_checks(con).items() if n}
        assert failing == {}
        (accounted,) = con.execute("select count(*) from run_rows").fetchone() or (0,)
    assert accounted == rows == summary["rows_read"]


def survives(sb: Any, tmp_path: Path, run: Any) -> None:
    """A 60-row run in 3 jobs completes (or reports failed jobs, to be retried), paying once."""
    f = write_csv(tmp_path / "p.csv", places(60))
    db = tmp_path / "wh.duckdb"
    state, s = run(inputs=[str(f)], db=str(db), route="job", chunk_rows=20)
    if s["chunks_failed"]:
        assert state == "FAILED" and s["exit_code"] == 1 and "retried" in s["message"]
    else:
        assert state == "COMPLETED", s
        assert s["succeeded"] + s["failed"] == s["submitted"] == 60
    assert_sound(db, sb.stats(), s, 60)


@pytest.mark.parametrize("faults", SCENARIOS)
def test_run_survives(tmp_path: Path, serve_sandbox: ServeSandbox, faults: dict[str, Any]) -> None:
    """Under the fault, the run completes (or reports failed jobs, to be retried), paying once."""
    sb = serve_sandbox(
        faults=FaultConfig(seed=11, retry_after_seconds=1, **faults), rows_per_second=5_000.0
    )
    survives(sb, tmp_path, run_library)


@flow
def test_flow_survives_every_fault_together(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Under every fault at once, the flow completes (or fails with failed jobs to be
    retried), paying once."""
    sb = serve_sandbox(
        faults=FaultConfig(seed=11, retry_after_seconds=1, **ALL_TOGETHER), rows_per_second=5_000.0
    )
    survives(sb, tmp_path, run_flow)


def test_a_job_that_never_finishes_is_cancelled_and_reported(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """A stalled job is cancelled at the poll timeout; its processed rows are loaded and billed."""
    sb = serve_sandbox(rows_per_second=5_000.0)
    sb.sandbox.inject("JOB", "stall")
    f = write_csv(tmp_path / "p.csv", places(40))
    db = tmp_path / "wh.duckdb"
    state, s = run_library(
        inputs=[str(f)], db=str(db), route="job", chunk_rows=20, poll_timeout=4.0
    )
    assert state == "FAILED" and s["exit_code"] == 1
    assert s["chunks_failed"] == 1 and s["not_answered"] == 10  # half of the stalled 20 rows
    assert sb.stats()["requests"]["DELETE /v1/jobs/{batch_id}"] == {"200": 1}
    with duckdb.connect(str(db), read_only=True) as con:
        (error,) = con.execute("select error from jobs where error is not null").fetchone() or ("",)
    assert "cancelled by placeflow" in error
    assert_sound(db, sb.stats(), s, 40)


def test_a_job_failing_part_way_is_loaded_and_only_the_rest_sent_again(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Reading 9: a job fails half way with its processed rows billed and their file published.
    Those rows are loaded and charged as the service charged them; the next run sends only the
    places still without an answer, so no place is billed twice (the sandbox's own count)."""
    sb = serve_sandbox(
        faults=FaultConfig(job_fail_midway_rate=1.0), rows_per_second=5_000.0, fail_rate=0.0
    )
    f = write_csv(tmp_path / "p.csv", places(40))
    db = tmp_path / "wh.duckdb"
    state, s = run_library(inputs=[str(f)], db=str(db), route="job", chunk_rows=20)
    assert state == "FAILED" and s["exit_code"] == 1 and s["chunks_failed"] == 2
    assert s["succeeded"] == 20 and s["not_answered"] == 20  # half of each job
    assert_sound(db, sb.stats(), s, 40)
    with duckdb.connect(str(db), read_only=True) as con:
        chunks = con.execute("select status, rows_loaded, error_code from jobs").fetchall()
    assert chunks == [("loaded", 10, "EXTERNAL_API_ERROR")] * 2
    _, again = run_library(inputs=[str(f)], db=str(db), route="job", chunk_rows=20)
    key = sb.stats()["keys"][KEY]
    sent = [job.total for job in sb.sandbox.backend.jobs.values()]
    assert sent == [20, 20, 20] and again["submitted"] == 20  # the 20 unanswered, once more
    assert key["billed"]["rows_billed_twice"] == 0 and key["billed"]["distinct_rows"] == 30
    assert key["credits"]["charged"] == s["charged"] + again["charged"] == 30


@flow
def test_credits_running_out_mid_run_leave_a_resumable_run(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """When the balance empties between two submissions the run stops (exit 3) and resumes."""
    sb = serve_sandbox(keys=(KeySpec(key=KEY, credits=1_000),), rows_per_second=5_000.0)
    f = write_csv(tmp_path / "p.csv", places(60))
    db = tmp_path / "wh.duckdb"
    first_post = sb.sandbox.hold("POST /v1/jobs/enrich")

    def drain_after_first() -> None:
        """Let the first submission through, then empty the balance before the second."""
        first_post.arrived.wait(60)
        second = sb.sandbox.hold("POST /v1/jobs/enrich")
        first_post.open()
        if second.arrived.wait(60):
            sb.sandbox.backend.set_available(KEY, 5)
            second.open()

    helper = threading.Thread(target=drain_after_first)
    helper.start()
    state, s = run_flow(inputs=[str(f)], db=str(db), route="job", chunk_rows=20)
    helper.join(60)
    assert state == "FAILED" and s["exit_code"] == 3 and s["status"] == "interrupted"
    assert "credits ran out" in s["message"] and "placeflow resume" in s["message"]
    sb.sandbox.backend.set_available(KEY, 1_000)
    state, done = run_flow(resume_run_id=s["run_id"], db=str(db))
    assert state == "COMPLETED" and done["run_id"] == s["run_id"]
    assert done["submitted"] == 60 and done["not_answered"] == 0
    assert_sound(db, sb.stats(), done, 60)


@slow
@flow
def test_a_job_still_queued_at_the_timeout_is_cancelled_with_nothing_charged(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Behind a stalled job a queued one waits; at the timeout both are settled, paid once.

    Cancelling the stalled job frees its slot, so the queued one may start and even finish
    before its own DELETE arrives: whatever it processed is loaded, the rest retried."""
    sb = serve_sandbox(rows_per_second=5_000.0, max_running_jobs=1)
    sb.sandbox.inject("JOB", "stall")
    f = write_csv(tmp_path / "p.csv", places(40))
    db = tmp_path / "wh.duckdb"
    state, s = run_flow(inputs=[str(f)], db=str(db), route="job", chunk_rows=20, poll_timeout=4.0)
    assert state == "FAILED" and s["chunks_failed"] >= 1 and s["not_answered"] >= 10
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select status, error_code from jobs order by chunk_no").fetchall()
    assert rows[0] == ("loaded", "TIMED_OUT")
    assert_sound(db, sb.stats(), s, 40)
