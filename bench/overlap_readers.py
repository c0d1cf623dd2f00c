"""Readers while two overlapping runs record their plans: how long is a reader locked out? (#47)

    .venv/bin/python bench/overlap_readers.py [--places 12000] [--route job|sync|both]
        [--period 0.25] [--section overlap-readers] [--no-write] [--again]

Serves the sandbox on loopback (in this process) at its fastest setting (jobs finish at
submission, rate windows scaled by 0.001, the client's alike: bench/runner.FAST_LIMITS), and
starts two `placeflow run` processes (the CLI as a user runs it, `--json`, exact dedupe) on one
warehouse, the second as soon as the first has made it: run A of places 0..N-1, run B of places
N/2..3N/2-1, so that half of B's places are A's (claimed by A, answered once). Meanwhile a plain
`duckdb.connect(path, read_only=True)` is tried every `--period` seconds. It reports the longest
streak of refused opens (the issue's measure: at most 2 s), each run's status and wall time, and
the credits the warehouse's ledger booked against the sandbox's own charge (nothing billed twice),
and writes its section of bench/RESULTS.md. With `--again`, run A's command is then run once more
alone on that warehouse (a rerun: its places are fresh), watched the same way.
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

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runner import FAST_LIMITS, FAST_SCALE, KEY, load_average, reader_opens, sandbox, write_section

HERE = Path(__file__).resolve().parents[1]


def write_places(path: Path, first: int, n: int) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "address", "city", "country"])
        w.writerows(
            [f"u{i}", f"Corner Cafe {i}", f"{i} Elm Street", "Springfield", "USA"]
            for i in range(first, first + n)
        )


def watch(db: Path, running: list[subprocess.Popen[str]], period: float) -> dict[str, Any]:
    """Open a read-only connection every `period` s while any of `running` runs: the longest
    streak of refused opens (seconds, and when it began), refusals and tries."""
    tick = threading.Event()
    started = time.monotonic()
    streak = longest = refused = made = 0
    began = at = 0.0
    turned: list[float] = []  # when each refused open was tried (epoch seconds)
    ended: dict[int, float] = {}  # each run's end, seconds from the start of the watch
    while any(p.poll() is None for p in running):
        tried = time.monotonic() - started
        for i, p in enumerate(running):
            if i not in ended and p.poll() is not None:
                ended[i] = tried
        opened = reader_opens(db)
        if opened is None:  # the first run has not made its warehouse yet
            tick.wait(period)
            continue
        made += 1
        if opened:
            streak = 0
        else:
            refused += 1
            turned.append(time.time())
            began = tried if streak == 0 else began
            streak += 1
            if streak > longest:
                longest, at = streak, began
        tick.wait(period)
    done = time.monotonic() - started
    return {"longest": longest * period, "at": at, "refused": refused, "made": made,
            "turned": turned, "t0": time.time() - done,
            "ended": [ended.get(i, done) for i in range(len(running))]}  # fmt: skip


def booked(db: Path) -> int:
    """Credits the warehouse's ledger booked as charged (charges and adjustments), all runs."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "select coalesce(sum(credits), 0) from credit_ledger"
            " where kind in ('charge', 'adjustment')"
        ).fetchone()
    return int(row[0]) if row else 0


def one_route(route: str, places: int, period: float, tmp: Path, again: bool) -> dict[str, Any]:
    """Two overlapping runs of `places` places on one new warehouse, by `route`; with `again`,
    then run A's command once more alone (a rerun: its places fresh but those that failed)."""
    half = places // 2
    a, b = tmp / f"{route}-a.csv", tmp / f"{route}-b.csv"
    write_places(a, 0, places)
    write_places(b, half, places)
    db = tmp / f"{route}.duckdb"
    load_before = load_average()
    with sandbox(rows_per_second=None, rate_window_scale=FAST_SCALE) as (sb, url):
        env = {**os.environ, "PLACEFLOW_API_KEY": KEY, "PLACEFLOW_BASE_URL": url,
               "PLACEFLOW_RATE_LIMITS": FAST_LIMITS}  # fmt: skip
        for name in ("PREFECT_API_URL", "PLACEFLOW_TIER", "PLACEFLOW_DB"):
            env.pop(name, None)

        def start(path: Path) -> subprocess.Popen[str]:
            cmd = [sys.executable, "-m", "placeflow.cli", "run", str(path), "--db", str(db),
                   "--json", "--dedupe", "exact", "--route", route]  # fmt: skip
            return subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp
            )

        t0 = time.perf_counter()
        first = start(a)
        while not db.exists() and first.poll() is None:  # B starts on the warehouse A made
            time.sleep(0.05)
        second = start(b)
        started_b = time.perf_counter() - t0
        watched = time.perf_counter() - t0
        seen = watch(db, [first, second], period)
        walls = [watched + seen["ended"][0], watched + seen["ended"][1] - started_b]
        outs: list[dict[str, Any]] = []
        for proc in (first, second):
            out_text, err = proc.communicate(timeout=1800)
            try:
                outs.append(json.loads(out_text))
            except json.JSONDecodeError:
                outs.append({"status": f"no JSON (exit {proc.returncode})", "error": err[-800:]})
        rerun: dict[str, Any] | None = None
        if again:
            t1 = time.perf_counter()
            third = start(a)
            rerun = {"seen": watch(db, [third], period)}
            out_text, err = third.communicate(timeout=1800)
            rerun["wall"] = time.perf_counter() - t1
            try:
                rerun["out"] = json.loads(out_text)
            except json.JSONDecodeError:
                rerun["out"] = {"status": f"no JSON (exit {third.returncode})", "error": err[-800:]}
        stats = sb.stats()
    charged = int(stats["keys"][KEY]["credits"]["charged"])
    return {
        "route": route, "seen": seen, "outs": outs, "walls": walls, "started_b": started_b,
        "charged": charged, "booked": booked(db), "load": (load_before, load_average()),
        "again": rerun,
    }  # fmt: skip


def render(results: list[dict[str, Any]], places: int, period: float, command: str) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
        cwd=HERE,
    ).stdout.strip()  # fmt: skip
    lines = [
        f"# Readers while two overlapping runs of {places:,} places record their plans"
        f" (commit {commit})",
        "",
        f"- command: `{command}`; date {datetime.now(UTC).isoformat(timespec='seconds')};"
        f" {platform.machine()}, {os.cpu_count()} cores (shared), Python"
        f" {platform.python_version()}",
        "- the sandbox on loopback at its fastest setting (jobs done at submission, rate windows"
        " scaled by 0.001, the client's alike); run A sends places 0..N-1, run B, started on the"
        " warehouse A made, places N/2..3N/2-1 (half of them A's); a plain"
        f" `duckdb.connect(path, read_only=True)` tried every {period:g} s while either runs",
        "",
        "| route | longest refused streak | refused / tries | run A | run B (started at) |"
        " ledger / sandbox charged | load before, after |",
        "|---|---:|---:|---|---|---:|---:|",
    ]
    for r in results:
        s = r["seen"]

        def said(out: dict[str, Any], wall: float) -> str:
            return (
                f"{out.get('status')} (exit {out.get('exit_code')}), {out.get('submitted', 0):,}"
                f" sent, {out.get('charged', 0):,} charged, {wall:.1f} s"
            )

        lines.append(
            f"| {r['route']} | **{s['longest']:.2f} s** (from {s['at']:.1f} s) |"
            f" {s['refused']} / {s['made']} | {said(r['outs'][0], r['walls'][0])} |"
            f" {said(r['outs'][1], r['walls'][1])} ({r['started_b']:.1f} s) |"
            f" {r['booked']:,} / {r['charged']:,} | {r['load'][0]:.1f}, {r['load'][1]:.1f} |"
        )
    for r in results:
        if r.get("again"):
            s, out = r["again"]["seen"], r["again"]["out"]
            lines.append(
                f"| {r['route']}, run A again alone | **{s['longest']:.2f} s** (from"
                f" {s['at']:.1f} s) | {s['refused']} / {s['made']} | {out.get('status')} (exit"
                f" {out.get('exit_code')}), {out.get('submitted', 0):,} sent,"
                f" {out.get('skipped_fresh', 0):,} fresh, {r['again']['wall']:.1f} s | | | |"
            )
    lines.append("")
    for r in results:
        met = r["seen"]["longest"] <= 2.0 and (
            not r.get("again") or r["again"]["seen"]["longest"] <= 2.0
        )
        same = r["booked"] == r["charged"]
        lines.append(
            f"- {r['route']}: readers locked out at most 2 s: **{'met' if met else 'missed'}**"
            f" ({r['seen']['longest']:.2f} s"
            + (f"; again alone {r['again']['seen']['longest']:.2f} s" if r.get("again") else "")
            + "); ledger = sandbox charged:"
            f" **{'met' if same else 'missed'}**"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--places", type=int, default=12_000)
    p.add_argument("--route", choices=("job", "sync", "both"), default="both")
    p.add_argument("--period", type=float, default=0.25, help="seconds between reads")
    p.add_argument("--section", default="overlap-readers")
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--again", action="store_true", help="then run A again alone (a rerun)")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="overlap-readers-"))
    routes = ("job", "sync") if args.route == "both" else (args.route,)
    results = []
    for route in routes:
        results.append(one_route(route, args.places, args.period, tmp, args.again))
        print(f"[overlap-readers] {results[-1]}", file=sys.stderr, flush=True)
    given = argv if argv is not None else sys.argv[1:]
    command = " ".join([".venv/bin/python", "bench/overlap_readers.py", *given])
    body = render(results, args.places, args.period, command)
    print(body)
    if not args.no_write:
        write_section(HERE / "bench" / "RESULTS.md", body, args.section)


if __name__ == "__main__":
    main()
