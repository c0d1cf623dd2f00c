"""Issue 44: never billed twice without knowing it, against a service that is not the sandbox.

The service (tests/foreign/service.py) is a second, small implementation of the job route
written from the spec alone, reading it differently wherever the spec leaves room
(docs/spec-readings.md, "A second service"). Every test judges placeflow by what that service
recorded: jobs created per chunk body, credits billed per place, and its usage against
placeflow's ledger. Either nothing was billed twice and the run completed (exit 0), or the run
says it was (status double_charged, exit 5) and books it: the ledger equals the usage."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.errors import EXIT_DOUBLE_CHARGED, EXIT_OK, PlaceflowError
from placeflow.fields import RateLimits
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.reporting.summary import exit_code_for
from placeflow.runner.target import Target
from placeflow.state.checks import run_checks
from placeflow.support.redact import Secret

from .service import KEY, Ledger, Reading, Service, serve

LIMITS = "20/s,1200/min"
"""What placeflow is told the key may do (the service's own windows are in `Reading.limits`)."""


def write_places(path: Path, n: int) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["id", "name", "address", "city", "country"])
        for i in range(n):
            out.writerow([f"f{i}", f"Harbour Bakery {i}", f"{i} Quay Road", "Portsmouth", "GB"])
    return path


def named_keys(db: Path) -> set[str]:
    """The Idempotency-Keys of the chunks the run booked as (possibly) billed twice."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select distinct jobs.idempotency_key from credit_ledger join jobs using (run_id,"
            " chunk_no) where credit_ledger.kind = 'possible'"
        ).fetchall()
    return {str(key) for (key,) in rows}


def ledger(db: Path) -> dict[str, int]:
    """The run's ledger by kind, after the warehouse's checks found nothing."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select kind, sum(credits) from credit_ledger group by kind").fetchall()
        assert {name: n for name, n in run_checks(con).items() if n} == {}
    return {str(k): int(v) for k, v in rows}


def extra(seen: Ledger) -> tuple[int, int]:
    """Chunk bodies the service made more than one job of, and credits billed beyond one per
    place."""
    bodies = sum(1 for n in seen.jobs_per_body().values() if n > 1)
    return bodies, sum(n - 1 for n in seen.billed_per_place().values() if n > 1)


def check(service: Service, db: Path, status: str, code: int, possible: int, text: str) -> None:
    """Either nothing billed twice and exit 0, or said (double_charged, exit 5, counted in
    possible_extra_credits); either way the ledger equals what the service billed."""
    with service.lock:
        service.settle_due()
    seen = service.ledger
    bodies, twice = extra(seen)
    assert not seen.held(), "every job the service made has ended"
    kinds = ledger(db)
    assert kinds.get("charge", 0) + kinds.get("adjustment", 0) == seen.charged, (kinds, text)
    if bodies == 0:
        assert (status, code) == ("completed", EXIT_OK), text
        assert twice == 0
    else:
        assert (status, code) == ("double_charged", EXIT_DOUBLE_CHARGED), (bodies, twice, text)
        assert possible >= twice, (possible, twice, text)
        assert seen.keys_made_twice() <= named_keys(db), text


def cli_run(
    service: Service, tmp: Path, rows: int, chunk: int, mode: str, *more: str
) -> dict[str, Any]:
    """`placeflow run --json` as a user runs it, the service named by its URL and a key."""
    env = {
        **os.environ, "PLACEFLOW_API_KEY": KEY, "PLACEFLOW_BASE_URL": service.base_url,
        "PLACEFLOW_RATE_LIMITS": LIMITS, "PLACEFLOW_DB": str(tmp / "wh.duckdb"),
    }  # fmt: skip
    csv_path = write_places(tmp / "places.csv", rows)
    args = ["run", str(csv_path), "--route", "job", "--chunk-rows", str(chunk), "--mode", mode]
    done = subprocess.run(
        [sys.executable, "-m", "placeflow.cli", *args, *more, "--json", "-q"],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp, check=False,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(done.stdout)
    assert out["exit_code"] == done.returncode, done.stderr[-2000:]
    return out


def test_a_lossy_job_run_against_another_service_bills_nothing_twice(tmp_path: Path) -> None:
    """400 rows in chunks of 50 through the CLI against the second service: 15% of requests
    and 15% of answers lost, keys kept 1 s, whole-second stamps, a clock 37 s behind, URLs of
    1 s, no Idempotent-Replayed: no chunk made twice, exit 0, the ledger equal to its usage."""
    reading = Reading(
        seed=7, drop_request_rate=0.15, drop_response_rate=0.15, retention=1.0, url_ttl=1.0,
        rows_per_second=400.0,
    )  # fmt: skip
    with serve(reading) as service:
        out = cli_run(service, tmp_path, 400, 50, "enrich")
        check(service, tmp_path / "wh.duckdb", out["status"], out["exit_code"],
              out["possible_extra_credits"], out.get("message") or "")  # fmt: skip
        assert out["status"] == "completed" and len(service.ledger.jobs) == 8, out["message"]
        assert out["usage_delta"] == service.ledger.charged == out["charged"]
        assert service.ledger.dropped_answers and service.ledger.replays


def test_failed_rows_billed_are_a_billing_difference_not_a_second_job(tmp_path: Path) -> None:
    """A service that bills failed rows (the spec calls them free), 30% of job POSTs' answers
    lost, keys kept 1 s: the usage's difference beyond the ledger is exactly the failed rows,
    booked as what the service billed them, not blamed on a chunk whose answers were lost as
    billed twice; the run completes (exit 0) and the ledger equals the usage."""
    reading = Reading(seed=5, drop_response_rate=0.3, retention=1.0, bill_failed_rows=True,
                      fail_row_rate=0.1, lose_reads=False)  # fmt: skip
    with serve(reading) as service:
        out = cli_run(service, tmp_path, 300, 30, "validate")
        check(service, tmp_path / "wh.duckdb", out["status"], out["exit_code"],
              out["possible_extra_credits"], out.get("message") or "")  # fmt: skip
        assert out["status"] == "completed", out["message"]
        assert out["adjustment"] == out["failed"] > 0, out["message"]


@pytest.mark.slow  # 17 s: the default suite keeps the lossy run and the failed-rows reading
def test_holds_shown_only_at_the_end_name_every_chunk_made_twice(tmp_path: Path) -> None:
    """Holds shown in the usage only when a job ends, keys kept 50 ms, 60% of job POSTs'
    answers lost: chunks are made two, three, four times, some seen during
    the run, some only by the balance; every chunk made more than once is named (billed twice,
    or may have been), the usage's difference booked, exit 5."""
    reading = Reading(seed=4, drop_response_rate=0.6, retention=0.05, holds_at_completion=True,
                      rows_per_second=500.0, lose_reads=False)  # fmt: skip
    with serve(reading) as service:
        out = cli_run(service, tmp_path, 1500, 50, "validate")
        check(service, tmp_path / "wh.duckdb", out["status"], out["exit_code"],
              out["possible_extra_credits"], out.get("message") or "")  # fmt: skip
        assert extra(service.ledger)[0] > 0, "the service made a chunk twice"


@pytest.mark.slow
def test_a_key_slower_than_told_is_waited_for_and_any_second_job_said(tmp_path: Path) -> None:
    """The key allows 6 requests a second where placeflow was told 20: 429s with an HTTP-date
    Retry-After (whole seconds) meet prompt replays, and a replay that waits past the 1 s the
    service keeps keys is new work. Whatever happened, the service's record and the run agree:
    nothing billed twice and exit 0, or said (exit 5), counted and booked."""
    reading = Reading(
        seed=11, drop_request_rate=0.15, drop_response_rate=0.15, retention=1.0,
        limits=((6, 1.0), (1200, 60.0)), rows_per_second=400.0,
    )  # fmt: skip
    with serve(reading) as service:
        out = cli_run(service, tmp_path, 400, 50, "validate")
        check(service, tmp_path / "wh.duckdb", out["status"], out["exit_code"],
              out["possible_extra_credits"], out.get("message") or "")  # fmt: skip
        assert service.ledger.rate_limited > 0


def test_keys_kept_shorter_than_a_prompt_retry_are_said_and_booked(tmp_path: Path) -> None:
    """Keys kept 10 ms (shorter than the prompt replays' 20 ms) and 30% of job POSTs' answers
    lost after processing: the service makes second and third jobs of chunks; the run says so
    (exit 5), counts at least what they cost in possible_extra_credits, and books the ledger to
    the service's usage, whole-second stamps and all."""
    reading = Reading(seed=3, drop_response_rate=0.3, retention=0.01, rows_per_second=2000.0,
                      lose_reads=False)  # fmt: skip
    with serve(reading) as service:
        out = cli_run(service, tmp_path, 600, 30, "validate")
        check(service, tmp_path / "wh.duckdb", out["status"], out["exit_code"],
              out["possible_extra_credits"], out.get("message") or "")  # fmt: skip
        assert extra(service.ledger)[0] > 0, "the service made a chunk twice"


def run_lib(service: Service, tmp: Path, rows: int, chunk: int, mode: str) -> RunSummary:
    """`placeflow.run` with the service's URL and key, as a Python user calls it."""
    target = Target(
        base_url=service.base_url, api_key=Secret(KEY), label=service.base_url,
        limits=RateLimits.parse(LIMITS),
    )  # fmt: skip
    options = RunOptions(route="job", mode=mode, chunk_rows=chunk)
    csv_path = write_places(tmp / "places.csv", rows)
    try:
        return placeflow.run([str(csv_path)], options=options, db=tmp / "wh.duckdb", target=target)
    except PlaceflowError as exc:
        summary = getattr(exc, "summary", None)
        if summary is None:
            raise
        return summary  # type: ignore[no-any-return]  # RunStopped.summary is a RunSummary


AFTER = ("date", "seconds", "fraction", "none")
"""Retry-After as an HTTP date, whole seconds, a fraction, or not sent."""


@pytest.mark.slow
@pytest.mark.parametrize("retention", [1.0, 2.0, 5.0])
@pytest.mark.parametrize("seed", range(16))
def test_lossy_5000_row_runs_bill_nothing_twice(
    tmp_path: Path, seed: int, retention: float
) -> None:
    """Issue 44's done-when against the second service: 5,000 rows in chunks of 250, 15% of
    requests and 15% of answers lost, keys kept 1, 2 or 5 s, each seed its own mix of the
    service's readings: nothing billed twice, exit 0, the ledger equal to its usage."""
    reading = Reading(
        seed=seed, drop_request_rate=0.15, drop_response_rate=0.15, retention=retention,
        whole_seconds=seed % 2 == 0, skew=(-37.0, 0.0, 45.5, -600.0)[seed % 4],
        holds_at_completion=seed % 3 == 1, url_ttl=(1.0, 5.0, 900.0)[seed % 3],
        bill_failed_rows=seed % 5 == 2, retry_after=AFTER[seed % 4],
        replay_header=seed % 7 == 0, rows_per_second=(1000.0, 5000.0)[seed % 2],
    )  # fmt: skip
    mode = "enrich" if seed % 2 else "validate"
    with serve(reading) as service:
        s = run_lib(service, tmp_path, 5000, 250, mode)
        code = exit_code_for(s.status)
        check(service, tmp_path / "wh.duckdb", s.status, code, s.possible_extra_credits,
              s.message or "")  # fmt: skip
        print(json.dumps({"seed": seed, "retention": retention, "status": s.status,
                          **service.ledger.counts()}))  # fmt: skip
        assert (s.status, len(service.ledger.jobs)) == ("completed", 20), s.message
