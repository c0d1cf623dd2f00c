"""Every fault knob at once, on 30,000 rows, against a sandbox that reads the spec otherwise
(issue 11): each invocation completes or stops with a clear, resumable state; resuming
finishes the run; every input row has a disposition; no row is billed twice; and the ledger's
charges plus adjustments equal what the sandbox billed. Virtual time (manual clock)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import FaultConfig
from placeflow.errors import CreditsRanOut
from placeflow.events import ChunkSubmitted, Event
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary

from .virtual_rig import KEY, Rig, rig, write_places

__all__ = ["rig"]  # the fixture

ROWS = 30_000
EVERYTHING = FaultConfig(
    seed=17,
    error_500_rate=0.03,
    error_503_rate=0.03,
    html_503_rate=0.03,
    extra_429_rate=0.03,
    drop_request_rate=0.02,
    drop_response_rate=0.02,
    slow_rate=0.05,
    slow_seconds=0.3,
    truncate_download_rate=0.3,
    corrupt_download_rate=0.3,
    unknown_fields=True,
    finalizing_seconds=5.0,
    job_fail_midway_rate=0.1,
    job_stall_rate=0.1,
    null_status_rate=0.2,
    bill_null_status=False,
    retry_after_seconds=1,
)


def settle(r: Rig, csv_path: Path, db: Path) -> tuple[RunSummary, list[str]]:
    """Run, then resume until the run is no longer interrupted; credits are added when they
    run out. Returns the last summary and each invocation's outcome."""
    seen: list[str] = []
    options = RunOptions(mode="enrich", chunk_rows=2_500, stuck_after=120.0)
    submitted: list[int] = []

    def drain(event: Event) -> None:  # credits run out once a few jobs are in
        if isinstance(event, ChunkSubmitted) and event.route == "job":
            submitted.append(event.chunk_no)
            if len(submitted) == 3:
                r.sandbox.backend.set_available(KEY, 0)

    stopped: CreditsRanOut | None = None
    try:
        s = placeflow.run(
            [str(csv_path)], options=options, db=db, target=r.target, clock=r.now,
            on_event=drain,
        )  # fmt: skip
    except CreditsRanOut as exc:
        stopped = exc
    if stopped is not None:  # the stop names what to do, and the run is left resumable
        assert stopped.summary is not None and "resume" in str(stopped)
        s = stopped.summary
        r.sandbox.backend.set_available(KEY, 1_000_000)
    seen.append(s.status)
    for _ in range(6):
        if s.status != "interrupted":
            break
        assert s.message and "resume" in s.message, s.message
        s = placeflow.resume(s.run_id, db=db, target=r.target, clock=r.now)
        seen.append(s.status)
    return s, seen


@pytest.mark.slow
def test_every_knob_at_once_finishes_pays_once_and_balances(rig: Any, tmp_path: Path) -> None:
    """30,000 rows under every fault at once, credits running out mid-run: resumed to the end,
    no row lost, 0 rows billed twice, charges + adjustments = the sandbox's billed credits."""
    r = rig(EVERYTHING, rows_per_second=400.0, url_ttl_seconds=2.0)
    f, db = write_places(tmp_path / "p.csv", ROWS), tmp_path / "wh.duckdb"
    s, seen = settle(r, f, db)
    assert seen[0] == "interrupted", seen  # credits ran out mid-run
    assert s.status in ("completed", "completed_with_failures"), (seen, s.message)
    key = r.key()
    assert key["billed"]["rows_billed_twice"] == 0
    assert r.sandbox.stats()["duplicate_submissions"] == 0
    with duckdb.connect(str(db), read_only=True) as con:
        (rows,) = con.execute("select count(*) from run_rows").fetchone() or (0,)
        kinds = dict(
            con.execute("select kind, sum(credits) from credit_ledger group by kind").fetchall()
        )
    assert rows == ROWS
    assert s.difference is not None
    assert int(kinds["charge"]) + int(kinds.get("adjustment", 0)) == key["credits"]["charged"]
