"""Readers during a research whose answers come slowly: how long is a reader locked out?

    python3 -m uv run --frozen python bench/research_readers.py [--places 300] [--slow 1.0]

Serves the sandbox on loopback (in this process) with every request answered `--slow` seconds
late (its `slow_rate` 1.0, `slow_seconds` knob), runs `placeflow research` of `--places` places
x 3 fields against it in another process (the CLI as a user runs it, `--json`), and meanwhile
opens a plain `duckdb.connect(path, read_only=True)` every `--period` seconds. It reports the
longest streak of refused opens (the issue's measure: at most 2 s), the research's wall time,
and its ledger against the sandbox's own charges, and writes its section of bench/RESULTS.md
(`--section` names it, so a run at an older commit can be kept beside this one's).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.emulator.settings import FaultConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from research_bench import FIELDS, RESULTS, ledger, replace_section
from runner import reader_opens

KEY = "sk_bench_readers_0000"


def write_places(path: Path, n: int) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "address", "city", "country"])
        w.writerows(
            [f"u{i}", f"Corner Cafe {i}", f"{i} Elm Street", "Springfield", "USA"] for i in range(n)
        )


def watch(db: Path, writer: subprocess.Popen[str], period: float) -> dict[str, Any]:
    """Open a read-only connection every `period` s while `writer` runs: the longest streak of
    refused opens (seconds, and when it began), refusals and tries."""
    tick = threading.Event()
    started = time.monotonic()
    streak = longest = refused = made = 0
    began = at = 0.0
    while writer.poll() is None:
        tried = time.monotonic() - started
        opened = reader_opens(db)
        if opened is None:  # the research has not made its warehouse yet
            tick.wait(period)
            continue
        made += 1
        if opened:
            streak = 0
        else:
            refused += 1
            began = tried if streak == 0 else began
            streak += 1
            if streak > longest:
                longest, at = streak, began
        tick.wait(period)
    return {"longest": longest * period, "at": at, "refused": refused, "made": made}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--places", type=int, default=300)
    parser.add_argument("--slow", type=float, default=1.0, help="seconds each answer is late")
    parser.add_argument("--period", type=float, default=0.25, help="seconds between reads")
    parser.add_argument("--section", default="research-readers")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="research-readers-"))
    places, db = tmp / "places.csv", tmp / "wh.duckdb"
    write_places(places, args.places)
    faults = FaultConfig(slow_rate=1.0, slow_seconds=args.slow)
    config = SandboxConfig(keys=(KeySpec(key=KEY, credits=10**7),), faults=faults, fail_rate=0.0)
    sandbox = Sandbox(config)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    started = datetime.now(UTC)
    with sandbox.serve() as served:
        env = {**os.environ, "PLACEFLOW_API_KEY": KEY, "PLACEFLOW_BASE_URL": served.base_url}
        env.pop("PREFECT_API_URL", None)
        fields = [f"--field={f}" for f in FIELDS]
        command = [sys.executable, "-m", "placeflow.cli", "research", str(places), *fields]
        t0 = time.perf_counter()
        writer = subprocess.Popen(
            [*command, "--verify-identity", "--db", str(db), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:
            seen = watch(db, writer, args.period)
            out_text, err = writer.communicate(timeout=1800)
        finally:
            if writer.poll() is None:
                writer.kill()
        wall = time.perf_counter() - t0
        stats = sandbox.stats()
    if writer.returncode != 0:
        raise SystemExit(f"the research failed ({writer.returncode}): {err[-2000:]}")
    out = json.loads(out_text)
    charged = int(stats["keys"][KEY]["credits"]["charged"])
    booked = ledger(db, out["run_id"])
    research_posts = sum(stats["requests"].get("POST /v1/deep-research", {}).values())
    lines = [
        f"# Readers during a research of {args.places:,} places whose answers come slowly"
        f" (commit {commit})",
        "",
        f"- command: `python3 -m uv run --frozen python bench/research_readers.py --places"
        f" {args.places} --slow {args.slow:g} --section {args.section}`; date"
        f" {started.isoformat(timespec='seconds')}; {platform.machine()}, Python"
        f" {platform.python_version()}",
        f"- the sandbox on loopback answers every request {args.slow:g} s late; `placeflow"
        " research` runs in its own process; a plain `duckdb.connect(path, read_only=True)` is"
        f" tried every {args.period:g} s while it runs",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| status | {out['status']} (exit {out['exit_code']}) |",
        f"| longest refused streak | **{seen['longest']:.2f} s** (from {seen['at']:.1f} s;"
        " target at most 2 s) |",
        f"| refused opens / tries | {seen['refused']} / {seen['made']} |",
        f"| research requests (sandbox) | {research_posts} |",
        f"| wall time | {wall:.1f} s |",
        f"| ledger (charge + adjustment) / sandbox charged | {booked:,} / {charged:,} |",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        replace_section(RESULTS, args.section, body)


if __name__ == "__main__":
    main()
