"""Ctrl-C of a `placeflow run` on a real terminal (issue 37): a tmux pane of its own, the run
carried out without Prefect with its live display drawn, a Ctrl-C typed as a person types it
(the terminal echoes it, the display is redrawn four times a second). What stays on screen
is what the person reads: the command that finishes the run, not the display over it.

The test waits on what the sandbox observed (the job polled) and on what the pane shows,
never on a guessed delay."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from placeflow.config import in_ci
from placeflow.emulator import FaultConfig
from placeflow.errors import EXIT_INTERRUPTED

from .conftest import KEY, Served, ServeSandbox, places, write_csv

pytestmark = [
    pytest.mark.slow,  # a placeflow process in a terminal: tens of seconds
    pytest.mark.skipif(
        shutil.which("tmux") is None and not in_ci(),  # CI installs it: there, a failure
        reason="tmux is not installed (Debian: apt-get install tmux; .ci/system-packages does)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 180.0
"""Seconds a bounded wait on the pane or the sandbox gives up after (a stuck child)."""
RUNNING_JOB = {"rows_per_second": 1.0, "faults": FaultConfig(eta_factor=0.25)}
"""A job of 20 rows runs for about 20 s (the Ctrl-C finds it running, however slow the
machine); the service's eta is a quarter of that, so it is polled early."""


class Pane:
    """A tmux server and session of the test's own (its socket named for it), one pane."""

    def __init__(self, name: str) -> None:
        self.socket, self.name = name, name

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return done.stdout

    def screen(self) -> str:
        """What the pane shows now, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-t", self.name)

    def wait_for(self, pattern: str) -> str:
        """The screen, once `pattern` is on it (bounded by LIMIT)."""
        deadline = time.monotonic() + LIMIT
        while not re.search(pattern, shown := self.screen(), re.M):
            assert time.monotonic() < deadline, f"no {pattern!r} on screen:\n{shown}"
            time.sleep(0.1)
        return shown


@contextmanager
def terminal(tmp_path: Path, command: list[str], env: dict[str, str]) -> Iterator[Pane]:
    """`command` in a 140x40 tmux pane with `env`, then `EXIT:<code>` printed, the pane kept."""
    script = tmp_path / "run.sh"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    script.write_text(
        f"{exports}cd {shlex.quote(str(ROOT))}\n{shlex.join(command)}\n"
        'echo "EXIT:$?"\nexec sleep 600\n'
    )
    pane = Pane(f"placeflow-test-{uuid.uuid4().hex[:8]}")
    pane.tmux("new-session", "-d", "-s", pane.name, "-x", "140", "-y", "40",
              f"env -i bash --noprofile --norc {shlex.quote(str(script))}")  # fmt: skip
    try:
        yield pane
    finally:
        pane.tmux("kill-server")


def test_one_ctrl_c_leaves_the_resume_command_on_screen(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """A run drawing its display, one Ctrl-C typed once its job is polled: the display is
    cleared, and the line naming `placeflow resume RUN_ID --db DB` stays on screen, whole,
    under no display line; exit 130."""
    sb: Served = serve_sandbox(**RUNNING_JOB)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "PLACEFLOW_API_KEY": KEY,
        "PLACEFLOW_BASE_URL": sb.base_url,
    }  # no PREFECT_API_URL: carried out without Prefect; no CI: the display is drawn
    command = [sys.executable, "-m", "placeflow.cli", "run", str(csv), "--db", str(db),
               "--route", "job"]  # fmt: skip
    with terminal(tmp_path, command, env) as pane:
        deadline = time.monotonic() + LIMIT
        while sb.requests("GET /v1/jobs/{batch_id}") == 0:  # submitted, and being polled
            assert time.monotonic() < deadline, f"no job was polled:\n{pane.screen()}"
            time.sleep(0.05)
        pane.wait_for(r"^processed ")  # the display is on screen
        pane.tmux("send-keys", "-t", pane.name, "C-c")
        shown = pane.wait_for(r"^EXIT:\d+")
    assert f"EXIT:{EXIT_INTERRUPTED}" in shown, shown
    said = re.search(r"placeflow resume (run_\S+) --db (\S+?);", shown)
    assert said is not None and said[2] == str(db), shown
    lines = [line for line in shown.splitlines() if line.strip()]
    assert lines[-1].startswith("EXIT:") and "placeflow resume" in lines[-2], shown
    for drawn in ("processed ", "loaded ", "credits ", "placeflow run ·", "^C"):
        assert drawn not in shown, f"{drawn!r} still on screen:\n{shown}"
