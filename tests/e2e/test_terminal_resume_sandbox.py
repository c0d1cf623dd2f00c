"""Ctrl-C, then resume, on the embedded sandbox, in a real terminal (issue 48): no key set, a
6,000-row run in a tmux pane of its own, a Ctrl-C typed once the sandbox has accepted a job
(what the sandbox kept beside the warehouse shows it), then `placeflow resume RUN` in the same
pane, which ends completed with exit 0. Nothing is billed twice: the witness is the ledger the
embedded sandbox kept, read by a sandbox started on it after both commands ended."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import duckdb

from placeflow.emulator import DEFAULT_API_KEY, Sandbox
from placeflow.emulator.keep import SandboxStore
from placeflow.errors import EXIT_INTERRUPTED, EXIT_OK
from placeflow.runner.target import sandbox_folder

from .conftest import places, write_csv
from .test_terminal_ctrl_c import LIMIT, pytestmark, terminal

__all__ = ["pytestmark"]  # slow, and tmux needed: as the Ctrl-C test's

ROWS = 6_000
POSTS = "POST /v1/jobs/enrich"


def _kept_posts(db: Path) -> int:
    """Job POSTs the embedded sandbox has kept so far (read from its snapshot, as it stands)."""
    try:
        snap = json.loads((sandbox_folder(db) / "state.json").read_text())
    except (OSError, ValueError):  # not written yet, or being replaced
        return 0
    return sum(snap["requests"].get(POSTS, {}).values())


def test_ctrl_c_then_resume_on_the_embedded_sandbox_completes(tmp_path: Path) -> None:
    """A Ctrl-C in the middle of a 6,000-row run against the embedded sandbox (exit 130), then
    `placeflow resume RUN`: completed, exit 0; every place loaded once, and the sandbox's kept
    ledger shows no row billed twice and a usage the run's own ledger explains."""
    csv, db = write_csv(tmp_path / "p.csv", places(ROWS)), tmp_path / "wh.duckdb"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
    }  # no PLACEFLOW_API_KEY: the embedded sandbox; no PREFECT_API_URL: without Prefect
    python = [sys.executable, "-m", "placeflow.cli"]
    run = [*python, "run", str(csv), "--db", str(db), "--route", "job", "--chunk-rows", "500",
           "--dedupe", "exact"]  # fmt: skip
    with terminal(tmp_path, run, env) as pane:
        deadline = time.monotonic() + LIMIT
        while _kept_posts(db) == 0:  # the sandbox accepted the first of twelve jobs
            assert time.monotonic() < deadline, f"no job was posted:\n{pane.screen()}"
            time.sleep(0.05)
        pane.tmux("send-keys", "-t", pane.name, "C-c")
        shown = pane.wait_for(r"^EXIT:\d+")
    assert f"EXIT:{EXIT_INTERRUPTED}" in shown, shown
    said = re.search(r"placeflow resume (run_\S+) --db (\S+?);", shown)
    assert said is not None, shown
    with duckdb.connect(str(db), read_only=True) as con:  # stopped in the middle
        stopped = con.execute("select status from runs").fetchall()
        loaded = con.execute("select count(*) from jobs where status = 'loaded'").fetchone()
    assert stopped == [("interrupted",)] and loaded is not None and loaded[0] < ROWS // 500
    resume = [*python, "resume", said[1], "--db", str(db)]
    with terminal(tmp_path, resume, env) as pane:
        shown = pane.wait_for(r"^EXIT:\d+")
    assert f"EXIT:{EXIT_OK}" in shown, shown
    assert "completed" in shown, shown

    store = SandboxStore(sandbox_folder(db))
    assert store.acquire()  # both processes have let it go
    try:
        kept = Sandbox(store=store)
        stats, ledger = kept.stats(), kept.backend.ledger()
    finally:
        store.release()
    billed = stats["keys"][DEFAULT_API_KEY]["billed"]
    assert (
        billed["rows_billed_twice"] == 0
        and stats["keys"][DEFAULT_API_KEY]["double_charged_refs"] == []
    )
    assert stats["requests"][POSTS]["200"] - stats["idempotent_replays"] == ROWS // 500
    charged = sum(sum(v["credits_by_ref"].values()) for v in ledger.values())
    assert charged == billed["rows"] == stats["keys"][DEFAULT_API_KEY]["credits"]["charged"]
    with duckdb.connect(str(db), read_only=True) as con:
        status = con.execute("select status, usage_after - usage_before from runs").fetchall()
        assert status == [("completed", charged)]
        assert con.execute("select count(*) from enrichments").fetchone() == (ROWS,)
