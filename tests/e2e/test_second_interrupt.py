"""Ctrl-C twice (issue 12: 21): the first Ctrl-C saves the run and says that a second one also
cancels the submitted jobs still running; the second does, as the sandbox itself observes (one
DELETE of the job); with one Ctrl-C the sandbox sees none. Real `placeflow run` processes and
real SIGINTs to their process group, as a terminal sends them; the test waits on the lines the
CLI prints and on the sandbox's request counts, never on a guessed delay."""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from placeflow.emulator import FaultConfig
from placeflow.errors import EXIT_INTERRUPTED

from .conftest import KEY, Served, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow  # placeflow subprocesses through Prefect: minutes on 2 cores

ROOT = Path(__file__).resolve().parents[2]
NOISE = ("Traceback", "Crash detected", "nanobind", "KeyboardInterrupt", " ERROR ")
HINT = "press Ctrl-C again"


@dataclass
class Running:
    """A `placeflow run` in a session of its own, its stderr read line by line as it comes."""

    proc: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    err: list[str] = field(default_factory=list)

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group

    def finish(self, timeout: float = 60.0) -> str:
        """Wait for the exit; its stdout (stderr is the reader thread's)."""
        self.proc.wait(timeout=timeout)
        assert self.proc.stdout is not None
        return self.proc.stdout.read()

    def line_with(self, text: str, timeout: float = 60.0) -> str:
        """The next stderr line containing `text`; fails if none comes within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no line with {text!r}:\n" + "".join(self.err)[-3000:]
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if text in line:
                return line


RUNNING_JOB = {"rows_per_second": 1.0, "faults": FaultConfig(eta_factor=0.25)}
"""A job of 20 rows runs for about 20 s and the service says a quarter of that: the first poll
(which `placeflow_run` waits for before the Ctrl-C) comes about 5 s in, so the Ctrl-C finds
the job still running however slow the machine. With a true eta the first poll came as the job
ended, and under load found it done: nothing to cancel, no hint, the test failed."""


@contextmanager
def placeflow_run(
    sb: Served, prefect_api: str, csv: Path, db: Path, *flags: str
) -> Iterator[Running]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=sb.base_url, PREFECT_API_URL=prefect_api)
    cmd = [
        sys.executable,
        "-m",
        "placeflow.cli",
        "run",
        str(csv),
        "--db",
        str(db),
        "--route",
        "job",
    ]
    with subprocess.Popen(
        [*cmd, *flags], env=env, cwd=ROOT, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    ) as proc:  # fmt: skip
        running = Running(proc)

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                running.err.append(line)
                running.lines.put(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 240
            while sb.requests("GET /v1/jobs/{batch_id}") == 0:  # submitted and being polled
                assert proc.poll() is None, "".join(running.err)[-3000:]
                assert time.monotonic() < deadline, "no job was polled"
                time.sleep(0.05)
            yield running
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=60)
            reader.join(timeout=60)


def placeflow(said: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `placeflow ...` command as the CLI said it, run as a user would type it."""
    words = shlex.split(said)
    assert words[0] == "placeflow", said
    return subprocess.run(
        [sys.executable, "-m", "placeflow.cli", *words[1:]], env=env, cwd=ROOT,
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_second_ctrl_c_cancels_the_submitted_job(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """A second Ctrl-C after the first one's line: exit 130, one JSON document naming the run,
    its resume command and 1 job cancelled; the sandbox saw exactly one DELETE of the job.
    The advice (issue 37) then does send the rest: the resume it names, then the command it
    names, leave every place answered, none billed twice, as the sandbox counts them."""
    sb = serve_sandbox(**RUNNING_JOB)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    with placeflow_run(sb, prefect_api, csv, db, "--json") as run:
        run.ctrl_c()
        hint = run.line_with(HINT)
        assert "1 submitted job(s) still running" in hint and "placeflow resume" in hint
        assert sb.requests("DELETE /v1/jobs/{batch_id}") == 0  # not before the second Ctrl-C
        run.ctrl_c()
        out = run.finish()
    err = "".join(run.err)
    assert run.proc.returncode == EXIT_INTERRUPTED, err[-3000:]
    for noise in NOISE:
        assert noise not in out + err, (out + err)[-3000:]
    doc = json.loads(out)  # exactly one document
    run_id = doc["run_id"]
    assert doc["status"] == "interrupted" and doc["cancelled"] == 1, doc["message"]
    assert doc["next"] == f"placeflow resume {run_id} --db {db}"
    assert doc["then"] == shlex.join(["placeflow", "run", str(csv), "--db", str(db),
                                      "--route", "job", "--json"])  # fmt: skip
    assert "then send the places they left unanswered with: placeflow run" in doc["message"]
    assert sb.requests("DELETE /v1/jobs/{batch_id}") == 1
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from runs").fetchall() == [("interrupted",)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=sb.base_url, PREFECT_API_URL=prefect_api)
    resumed = placeflow(doc["next"], env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "not answered (retried next run)" in resumed.stdout  # the resume alone leaves them
    sent = placeflow(doc["then"], env)
    assert sent.returncode == 0, sent.stderr[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        answered = con.execute("select count(distinct place_key) from place_outcomes").fetchone()
    assert answered == (20,)
    billed = sb.stats()["keys"][KEY]["billed"]
    assert billed["rows_billed_twice"] == 0 and billed["distinct_rows"] <= 20


def test_one_ctrl_c_says_how_to_cancel_and_cancels_nothing(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """One Ctrl-C: one line with the resume command and how to cancel the running job, exit
    130 once the wait for a second Ctrl-C is over; the sandbox saw no DELETE."""
    sb = serve_sandbox(**RUNNING_JOB)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    with placeflow_run(sb, prefect_api, csv, db, "--quiet") as run:
        run.ctrl_c()
        run.line_with(HINT)
        out = run.finish()
    err = "".join(run.err)
    assert run.proc.returncode == EXIT_INTERRUPTED, err[-3000:]
    assert out == ""  # the line is a notice: stderr
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and HINT in lines[0], err[-3000:]
    for noise in NOISE:
        assert noise not in err, err[-3000:]
    assert sb.requests("DELETE /v1/jobs/{batch_id}") == 0  # finished work is billed: kept
