"""An export whose destination disk is full (#44 item 6): a real `placeflow export --json` gives
one JSON document with exit code 1 and the OS's words, and on stderr at most that one line: no
traceback of DuckDB's IOException (Parquet), no Rust panic of delta-rs's writer (Delta).

The disk is a small tmpfs mounted by the test, filled before the export (the suite runs as root
in CI); where mounting is not permitted the tests are skipped and say so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placeflow.errors import EXIT_FAILED
from placeflow.exporters.failures import without_panics
from tests.e2e.test_disk_full import fill, small_disk

ROOT = Path(__file__).resolve().parents[2]
NOISE = ("Traceback", "panicked", "IOException", "stack backtrace")
PANIC = """
thread 'tokio-rt-worker' (856) panicked at /x/object_store-0.13.2/src/buffered.rs:369:41:
Already shut down
stack backtrace:
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
"""


@pytest.mark.parametrize("scheme", ["", "delta://"])
def test_a_full_disk_is_one_line_exit_1_and_json(db: Path, tmp_path: Path, scheme: str) -> None:
    """Parquet and Delta on a full disk: exit 1, one JSON document saying "No space left on
    device" in one line (delta-rs's own error spans lines, with terminal colours), stderr
    one line at most."""
    with small_disk(tmp_path / "disk", "4m") as disk:
        fill(disk)
        dest = f"{scheme}{disk / 'lake'}"
        done = subprocess.run(
            [sys.executable, "-m", "placeflow.cli", "export", "--db", str(db), "--to", dest,
             "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    assert done.returncode == EXIT_FAILED, done.stderr[-3000:]
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr, done.stderr[-3000:]
    assert len(done.stderr.strip().splitlines()) <= 1  # at most the one line of the error
    doc = json.loads(done.stdout)
    assert doc["exit_code"] == EXIT_FAILED
    message = str(doc.get("message", doc.get("error")))
    assert "No space left on device" in message
    assert "\n" not in message and "\x1b" not in message  # one line, no terminal colours


def test_a_rust_panic_is_taken_out_of_stderr_and_the_rest_kept() -> None:
    """The lines of a Rust panic go; a warning written beside them stays."""
    assert without_panics(f"a warning\n{PANIC}after\n") == "a warning\n\nafter\n"
