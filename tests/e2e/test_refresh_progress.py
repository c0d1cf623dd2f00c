"""`placeflow refresh` on a terminal and through pipes: the live display under a pty, nothing
drawn under --json (stdout one JSON document), and the no-key notice on stderr."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

import placeflow
from placeflow.fields import RateLimits
from placeflow.options import RunOptions
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

from .conftest import KEY, ServeSandbox
from .test_progress import ANSI, ROOT, counts, environment, run_in_pipes, run_in_terminal

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

PLACES = 120


@pytest.fixture
def warehouse(tmp_path: Path, serve_sandbox: ServeSandbox) -> Path:
    """A warehouse holding the first rows of the Fodor's sample, answered by a sandbox."""
    with (ROOT / "data" / "samples" / "restaurants_fodors.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    source = tmp_path / "fodors.csv"
    with source.open("w", newline="") as f:
        csv.writer(f).writerows(rows[: PLACES + 1])
    served = serve_sandbox()
    target = Target(
        base_url=served.base_url, api_key=Secret(KEY), label="sandbox",
        limits=RateLimits.for_tier("paid"),
    )  # fmt: skip
    db = tmp_path / "wh.duckdb"
    run = placeflow.run([str(source)], options=RunOptions(route="job"), db=db, target=target)
    assert run.status == "completed"
    return db


def refresh_command(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "placeflow.cli", "refresh", "--db", str(db),
            "--older-than", "0", *extra]  # fmt: skip


def test_refresh_draws_the_live_display_on_a_terminal(
    warehouse: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """Under a pty, `placeflow refresh` draws the display (ESC sequences), its loaded count
    ends at the places it re-checked, and the summary follows."""
    sb = serve_sandbox(epoch=1)
    code, out = run_in_terminal(refresh_command(warehouse), environment(sb.base_url, prefect_api))
    text = ANSI.sub(b"", out).replace(b"\r", b"").decode("utf-8", "replace")
    assert code == 0, text[-3000:]
    assert b"\x1b[" in out and "Traceback" not in text
    loaded = counts(text, "loaded")
    assert loaded == sorted(loaded) and loaded[-1] > 0
    assert "completed" in text[text.rindex("\nloaded ") :]


def test_refresh_json_without_a_key_prints_one_document_and_the_notice_on_stderr(
    warehouse: Path, prefect_api: str
) -> None:
    """With no key, `refresh --json` through pipes prints exactly one JSON document on stdout;
    the embedded-sandbox notice goes to stderr; no control bytes on either."""
    env = environment("unused", prefect_api)
    for name in ("PLACEFLOW_API_KEY", "PLACEFLOW_BASE_URL"):
        env.pop(name, None)
    code, out, err = run_in_pipes(refresh_command(warehouse, "--json"), env)
    assert code == 0, err[-3000:]
    assert b"\x1b" not in out and b"\x1b" not in err
    summary = json.loads(out)
    assert summary["status"] == "completed" and summary["submitted"] > 0
    assert b"no PLACEFLOW_API_KEY set" in err and b"PLACEFLOW_API_KEY" not in out
