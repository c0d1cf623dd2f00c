"""SIGKILL a real `placeflow run` at each risky moment; running it again finishes the work
without paying twice, as the sandbox's own ledger and counts show.

The killed run is always a `placeflow run` subprocess. The run that finishes it is the same
command through the flow in this process (what the CLI calls, without paying a second Python
start-up per case), and once `placeflow resume RUN_ID` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.state.checks import run_checks

from .conftest import KEY, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow  # placeflow subprocesses killed and rerun, as the crash matrix

ROOT = Path(__file__).resolve().parents[2]


def command(csv: Path, db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "placeflow.cli",
        "run",
        str(csv),
        "--db",
        str(db),
        "--route",
        "job",
        "--json",
    ]


def environment(base_url: str, prefect_api: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=base_url, PREFECT_API_URL=prefect_api)
    return env


def finish(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    for text in (done.stdout, done.stderr):
        assert "Traceback" not in text and " ERROR " not in text, text[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def run_again(csv: Path, db: Path) -> dict[str, Any]:
    """The same command as `command(csv, db)`, through the flow the CLI runs."""
    from placeflow.flows.run import run_files
    from placeflow.options import RunOptions

    state = run_files(
        inputs=[str(csv)], db=str(db), options=RunOptions(route="job"), return_state=True
    )
    summary = state.result(raise_on_failure=False)
    assert isinstance(summary, dict) and state.is_completed(), summary
    return summary


def run_id_of(db: Path) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select run_id from runs").fetchall()
    assert len(rows) == 1
    return str(rows[0][0])


def assert_paid_once(stats: dict[str, Any], summary: dict[str, Any], db: Path) -> None:
    key = stats["keys"][KEY]
    assert stats["jobs"]["created"] == 1, "the resumed run re-attached instead of resubmitting"
    assert stats["duplicate_submissions"] == 0 and key["double_charged_refs"] == []
    assert key["credits"]["held"] == 0
    assert summary["charged"] == key["credits"]["charged"]
    assert summary["status"] == "completed" and summary["not_answered"] == 0
    with duckdb.connect(str(db)) as con:
        assert all(n == 0 for n in run_checks(con).values()), run_checks(con)
        (rows,) = con.execute("select count(*) from run_rows").fetchone() or (0,)
        (outcomes,) = con.execute("select count(*) from enrichments").fetchone() or (0,)
    assert rows == 120 and outcomes == summary["submitted"] == 120


@pytest.mark.parametrize(
    ("route", "drop", "moment"),
    [
        ("POST /v1/jobs/enrich", True, "before the POST reached the service"),
        ("POST /v1/jobs/enrich", False, "after the POST, before the batch_id was stored"),
        ("GET /v1/jobs/{batch_id}", False, "while polling"),
        ("GET /files", False, "during the download"),
    ],
)
def test_kill_and_run_again(
    tmp_path: Path,
    serve_sandbox: ServeSandbox,
    prefect_api: str,
    route: str,
    drop: bool,
    moment: str,
) -> None:
    """Killed at a held request, the same command again completes and pays once."""
    sb = serve_sandbox(rows_per_second=2_000.0)
    csv, db = write_csv(tmp_path / "p.csv", places(120)), tmp_path / "wh.duckdb"
    cmd, env = command(csv, db), environment(sb.base_url, prefect_api)
    gate = sb.sandbox.hold(route)
    with subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        assert gate.arrived.wait(120), f"the run never reached {route}"
        proc.kill()
    gate.open(drop=drop)
    summary = run_again(csv, db)
    assert summary["run_id"] == run_id_of(db), "the unfinished run was resumed, not redone"
    assert_paid_once(sb.stats(), summary, db)


def test_kill_during_load_then_resume_by_id(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """Killed once the verified file is on disk (loading), `placeflow resume` finishes it."""
    sb = serve_sandbox()
    csv, db = write_csv(tmp_path / "p.csv", places(120)), tmp_path / "wh.duckdb"
    env = environment(sb.base_url, prefect_api)
    with subprocess.Popen(
        command(csv, db), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("runs/*/chunk-*/*.jsonl.gz")):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.001)
        proc.kill()
    run_id = run_id_of(db)
    resume = [sys.executable, "-m", "placeflow.cli", "resume", run_id, "--db", str(db), "--json"]
    summary = finish(resume, env)
    assert summary["run_id"] == run_id
    assert_paid_once(sb.stats(), summary, db)
