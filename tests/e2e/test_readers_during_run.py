"""Readers are never locked out for long: while a run writes in another process, on the
synchronous route and on the job route, a read-only DuckDB connection opened every 0.25 s is
refused for at most 2 s in a row (the run lets go of the warehouse whenever it waits, and on
the synchronous route, whose waits are short, at its next request once it has held it a second,
leaving it free 0.3 s with the request's wait counted in)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from .conftest import ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow  # two routes, each a run of several seconds in its own process

PERIOD = 0.25
"""How often the reader tries (seconds): the issue's measure."""


def longest_refusal(db: Path, writer: subprocess.Popen[str]) -> tuple[float, int, int, float]:
    """Open a read-only connection every PERIOD while `writer` runs: the longest run of refused
    attempts in seconds, how many attempts were refused and made, and when the longest run
    began (seconds after the measure did: which stage of the run held the warehouse)."""
    tick = threading.Event()
    started = time.monotonic()
    streak = longest = refused = made = 0
    began = at = 0.0
    while writer.poll() is None:
        made += 1
        tried = time.monotonic() - started
        try:
            with duckdb.connect(str(db), read_only=True) as con:
                con.execute("select count(*) from runs").fetchall()
            streak = 0
        except (duckdb.IOException, duckdb.CatalogException):
            if db.exists():
                refused += 1
                began = tried if streak == 0 else began
                streak += 1
                if streak > longest:
                    longest, at = streak, began
        tick.wait(PERIOD)  # the measure's own period, not a wait for an outcome
    return longest * PERIOD, refused, made, at


@pytest.mark.parametrize(
    ("route", "mode", "rows"), [("sync", "validate", 60), ("job", "enrich", 300)]
)
def test_a_reader_is_never_refused_for_more_than_two_seconds(
    tmp_path: Path, serve_sandbox: ServeSandbox, route: str, mode: str, rows: int
) -> None:
    """A run of several seconds in another process (60 synchronous validations at the paid
    key's 10 a second; 3 bulk jobs of 100 rows at 40 rows a second): the reader's longest
    refused streak stays within 2 s; the run completes."""
    serve_sandbox(rows_per_second=40.0)
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "p.csv", places(rows))
    opts = [f"--option=route={route}", f"--option=mode={mode}"]
    if mode == "validate":
        opts.append("--option=attributes=[]")
    else:
        opts.append("--option=chunk_rows=100")
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.proc_run", "run", str(db), str(csv), *opts],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        longest, refused, made, at = longest_refusal(db, writer)
        out, err = writer.communicate(timeout=300)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, err
    summary = json.loads(out)
    assert summary["status"] == "completed"
    assert summary["succeeded"] + summary["failed"] == rows  # every place answered
    assert made >= 8, "the run ended before the reader could measure it"
    when = f"refused {longest} s in a row from {at:.2f} s; the run's stages (wall s)"
    assert longest <= 2.0, (when, summary["timings"], refused, made)
