"""A run that left places to another run, which still have no answer when it stops waiting, says
so: status left_to_other_run, exit 4, its wait and its end on stderr though not on a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import placeflow
from placeflow.emulator import ManualClock
from placeflow.options import RunOptions

from .conftest import ServeSandbox, places, write_csv
from .test_claims import Running, loopback

pytestmark = pytest.mark.slow  # a run held in flight beside a CLI process: ~20 s


def test_a_run_whose_claims_are_still_unanswered_ends_left_to_other_run(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Run A's job cannot end (the sandbox's clock stands still); run B, with half its places
    A's, buys its own, waits a second for A's, and ends left_to_other_run with exit 4, naming
    A; stderr (a pipe) has the wait and its end. The sandbox billed B's own places alone."""
    clock = ManualClock()
    served = serve_sandbox(clock=clock, rows_per_second=1000.0)
    db = tmp_path / "wh.duckdb"
    a_csv = write_csv(tmp_path / "a.csv", places(20))
    b_csv = write_csv(tmp_path / "b.csv", places(20, start=10))  # 10 of A's, 10 new
    a = Running(lambda ev: placeflow.run([str(a_csv)], db=db, target=loopback(served.base_url),
                                         options=RunOptions(route="job"), on_event=ev))  # fmt: skip
    assert a.polled.wait(120), a.error
    b = subprocess.run(
        [sys.executable, "-m", "placeflow.cli", "run", str(b_csv), "--db", str(db),
         "--route", "sync", "--claim-wait", "1", "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    clock.advance(3600)
    first = a.done()
    assert b.returncode == 4, b.stdout + b.stderr
    second = json.loads(b.stdout)
    assert second["status"] == "left_to_other_run" and second["exit_code"] == 4
    assert second["claims_left"] == {first.run_id: 10} and second["submitted"] == 10
    assert "waiting up to 1 s for places bought by run(s)" in b.stderr
    assert "stopped waiting for places bought by other runs" in b.stderr
    assert first.status == "completed"
    account = served.sandbox.backend.keys[next(iter(served.sandbox.backend.keys))].account
    assert account.rows_billed_twice() == [] and sum(account.rows_billed.values()) == 30
