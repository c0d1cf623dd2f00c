"""`placeflow research` in a terminal and through pipes: the live display from the research's
own events on a pty; under --json one JSON document and not one control character."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_progress import ANSI, run_in_terminal  # the pty runner of `run`'s test

from .conftest import KEY, SCALE, ServeSandbox, places, write_csv

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120.0  # seconds: a bound on a stuck child, never a timing assert


def environment(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_") and k != "CI"}
    env.update(
        PLACEFLOW_API_KEY=KEY,
        PLACEFLOW_BASE_URL=base_url,
        PLACEFLOW_RATE_LIMITS=f"10/{SCALE:g}s,100/{60 * SCALE:g}s",
        TERM="xterm-256color",
    )
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


def command(csv: Path, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "placeflow.cli", "research", str(csv), "--field", "vegan:bool",
            "--field", "price:enum:$|$$", "--db", str(db), *extra]  # fmt: skip


def last(text: str, label: str) -> int:
    """The last value the display showed on its `label` line."""
    seen = re.findall(rf"^{label} +([\d,]+)", text, re.M)
    assert seen, (label, text[-2000:])
    return int(seen[-1].replace(",", ""))


@pytest.mark.slow  # a child process: seconds of imports; the events are proved in-process
def test_on_a_terminal_the_display_ends_on_the_sandbox_figures(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Under a pty the research draws the live display (read, planned, loaded, credits charged
    as the sandbox billed them), then prints its summary."""
    sb = serve(fail_rate=0.0)
    csv = write_csv(tmp_path / "p.csv", places(23))
    code, out = run_in_terminal(command(csv, tmp_path / "wh.duckdb"), environment(sb.base_url))
    text = ANSI.sub(b"", out).replace(b"\r", b"").decode("utf-8", "replace")
    assert code == 0, text[-3000:]
    assert b"\x1b[" in out and "Traceback" not in text
    assert last(text, "read") == 23 and last(text, "planned") == 23
    assert last(text, "loaded") == 23
    charged = re.findall(r"^credits +[\d,]+ held +([\d,]+) charged", text, re.M)
    assert int(charged[-1].replace(",", "")) == sb.credits()["charged"] == 23 * 2
    assert re.search(r"^research \S+: completed", text[text.rindex("\nloaded ") :], re.M)


@pytest.mark.slow  # a second child process; one JSON document is proved in-process by default
def test_json_through_pipes_is_one_document_without_control_characters(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """--json through pipes: stdout is exactly one JSON document (the sandbox's charge); no
    ESC byte on either stream."""
    sb = serve(fail_rate=0.0)
    csv = write_csv(tmp_path / "p.csv", places(12))
    cmd = command(csv, tmp_path / "wh.duckdb", "--json")
    done = subprocess.run(cmd, env=environment(sb.base_url), cwd=ROOT, capture_output=True,
                          timeout=LIMIT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"\x1b" not in done.stdout and b"\x1b" not in done.stderr
    out = json.loads(done.stdout)
    assert out["charged"] == sb.credits()["charged"] == 12 * 2 and out["status"] == "completed"
