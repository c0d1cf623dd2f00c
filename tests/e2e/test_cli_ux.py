"""Ctrl-C of a real `placeflow run` (issue 12): it stops at once with one JSON document naming
the run and the exact resume command, exit 130, no traceback or crash noise, the run marked
`interrupted` in the warehouse; resuming it then completes the job the sandbox kept running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.errors import EXIT_INTERRUPTED
from tests.sandbox_target import sandbox_target

from .conftest import KEY, Served, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

ROOT = Path(__file__).resolve().parents[2]
NOISE = ("Traceback", "Crash detected", "nanobind", "KeyboardInterrupt", " ERROR ")


def cli_env(**settings: str) -> dict[str, str]:
    """This process's environment without its PLACEFLOW_ settings, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    return {**env, **settings}


def interrupted_run(
    sb: Served, csv: Path, db: Path, *flags: str, prefect_api: str
) -> tuple[int, str, str]:
    """`placeflow run CSV --db DB --route job FLAGS` against `sb`, sent SIGINT (to its whole
    process group, as a terminal's Ctrl-C) once the sandbox saw its job polled: its exit code,
    stdout and stderr."""
    env = cli_env(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=sb.base_url,
                  PREFECT_API_URL=prefect_api)  # fmt: skip
    cmd = [sys.executable, "-m", "placeflow.cli", "run", str(csv), "--db", str(db)]
    with subprocess.Popen(
        [*cmd, "--route", "job", *flags], env=env, cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    ) as proc:  # fmt: skip
        deadline = time.monotonic() + 180
        while sb.requests("GET /v1/jobs/{batch_id}") == 0:  # the job is submitted and polled
            assert proc.poll() is None and time.monotonic() < deadline, "no job was polled"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def test_ctrl_c_saves_the_run_prints_resume_and_resume_completes(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """SIGINT once the job is polled: exit 130, one JSON document with run_id, `interrupted`
    and `placeflow resume RUN_ID --db ...`; no noise; the job is not cancelled; resume loads it."""
    sb = serve_sandbox(rows_per_second=4.0)  # 20 rows: the job runs for about 5 s
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    code, out, err = interrupted_run(sb, csv, db, "--json", prefect_api=prefect_api)
    assert code == EXIT_INTERRUPTED, err[-3000:]
    for noise in NOISE:
        assert noise not in out + err, (out + err)[-3000:]
    doc = json.loads(out)  # exactly one document
    run_id = doc["run_id"]
    assert doc["status"] == "interrupted"
    assert doc["next"] == f"placeflow resume {run_id} --db {db}"
    assert doc["jobs_submitted"] == 1
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from runs").fetchall() == [("interrupted",)]
    assert sb.requests("DELETE /v1/jobs/{batch_id}") == 0  # finished work is billed: kept
    target = sandbox_target(sb.base_url, KEY)
    summary = placeflow.resume(run_id, db=db, target=target)
    assert summary.status == "completed" and summary.succeeded + summary.failed == 20
    assert sb.requests("POST /v1/jobs/enrich") == 1  # re-attached, not sent again


def test_json_without_a_key_is_one_document_on_stdout(tmp_path: Path, prefect_api: str) -> None:
    """Without PLACEFLOW_API_KEY, `run --json` keeps the sandbox notice on stderr: stdout is one
    JSON document, whose time counts the whole command."""
    csv, db = write_csv(tmp_path / "p.csv", places(6)), tmp_path / "wh.duckdb"
    env = cli_env(PREFECT_API_URL=prefect_api)
    done = subprocess.run(
        [sys.executable, "-m", "placeflow.cli", "run", str(csv), "--db", str(db), "--json"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)  # the whole of stdout
    assert doc["status"] == "completed" and doc["rows_read"] == 6
    assert doc["wall_seconds"] >= doc["seconds"]
    report = Path(doc["report"])  # the flow wrote the run's report beside the warehouse
    assert report == db.parent / "reports" / f"{doc['run_id']}.html"
    assert doc["run_id"] in report.read_text(encoding="utf-8")
    assert "no PLACEFLOW_API_KEY" in done.stderr
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr


def test_ctrl_c_with_cancel_on_interrupt_cancels_the_running_job(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """With --cancel-on-interrupt, Ctrl-C also asks the service to cancel the running job."""
    sb = serve_sandbox(rows_per_second=1.0)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    code, out, err = interrupted_run(
        sb, csv, db, "--quiet", "--cancel-on-interrupt", prefect_api=prefect_api
    )
    assert code == EXIT_INTERRUPTED, err[-3000:]
    assert out == ""  # the one line is a notice: stderr
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and "1 cancelled" in lines[0] and "placeflow resume" in lines[0]
    assert sb.requests("DELETE /v1/jobs/{batch_id}") == 1
