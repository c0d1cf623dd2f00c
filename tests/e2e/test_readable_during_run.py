"""The warehouse stays readable during a run: the run holds DuckDB's write connection only
while it writes, so other processes read between writes (they wait briefly for a write)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import ManualClock
from placeflow.events import Event, JobProgress
from placeflow.fields import RateLimits
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

from .conftest import KEY, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

READER = """
import sys
from placeflow.store.warehouse import connect

with connect(sys.argv[1], read_only=True, wait=60) as con:
    print(con.execute("select count(*) from jobs where status = 'submitted'").fetchall()[0][0])
"""


def reader(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_other_processes_read_while_a_job_runs(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """While the run waits on a bulk job (the sandbox's clock stopped, so the job cannot end),
    `placeflow runs` and a read-only connection in other processes succeed; the run then
    completes once the sandbox's clock moves on."""
    clock = ManualClock()
    served = serve_sandbox(clock=clock, rows_per_second=1000.0)  # an eta of moments
    target = Target(
        base_url=served.base_url,
        api_key=Secret(KEY),
        label="sandbox",
        limits=RateLimits.for_tier("paid"),
    )
    db = tmp_path / "wh.duckdb"
    source = write_csv(tmp_path / "p.csv", places(3))
    polled = threading.Event()
    outcome: dict[str, Any] = {}

    def on_event(event: Event) -> None:
        if isinstance(event, JobProgress):
            polled.set()

    def work() -> None:
        try:
            outcome["summary"] = placeflow.run(
                [str(source)],
                db=db,
                target=target,
                options=placeflow.RunOptions(route="job"),
                on_event=on_event,
            )
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc

    runner = threading.Thread(target=work, daemon=True)
    runner.start()
    try:
        assert polled.wait(120), outcome.get("error")
        runs = reader("-m", "placeflow.cli", "runs", "--db", str(db), "--json")
        read = reader("-c", READER, str(db))
        assert runner.is_alive()  # the job cannot end while the sandbox's clock stands still
    finally:
        clock.advance(3600)
        runner.join(180)
    assert runs.returncode == 0, runs.stderr
    (line,) = runs.stdout.strip().splitlines()
    assert '"status": "running"' in line
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "1"  # the job's chunk, submitted and not yet loaded
    assert "error" not in outcome, outcome.get("error")
    assert outcome["summary"].status == "completed"
    assert served.stats()["requests"]["POST /v1/jobs/enrich"] == {"200": 1}
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from runs").fetchall() == [("completed",)]


def test_let_go_keeps_an_open_transaction(tmp_path: Path) -> None:
    """Writer.let_go closes the connection between statements, never inside a transaction;
    the next statement opens it again."""
    from placeflow.store.writer import Writer

    with Writer(tmp_path / "wh.duckdb") as wh:
        with wh.transaction() as con:
            con.execute("create table t (i int)")
            wh.let_go()
            wh.execute("insert into t values (1)")
        assert wh.opened == 1
        wh.let_go()
        with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as other:
            assert other.execute("select i from t").fetchall() == [(1,)]
        assert wh.execute("select count(*) from t").fetchall() == [(1,)]
        assert wh.opened == 2
