"""Deep research benchmark: requests and wall time for 1,000 places x 3 fields with identity.

    python3 -m uv run --frozen python bench/research_bench.py [--places 1000] [--scale 1.0]

Serves the sandbox on loopback at the paid key's limits (windows x --scale), runs the research
stages in this process, and writes its section of bench/RESULTS.md: requests against the least
possible (one per 10 places, plus the account calls), and wall time against the time the rate
limits alone impose on that many requests. Every count is the sandbox's own.
"""

from __future__ import annotations

import argparse
import csv
import platform
import re
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.emulator.research import research_stats
from placeflow.fields import RateLimits
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.runner.research import ResearchOptions, research
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

KEY = "sk_bench_research_0000"
FIELDS = ("cuisine:enum:italian|thai|mexican|other", "has_outdoor_seating:bool", "owner_person")
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
SECTION = "research-bench"


def limit_seconds(requests: int, scale: float) -> float:
    """Least wall time for `requests` requests at 10/s and 100/min (windows x scale)."""
    if requests <= 0:
        return 0.0
    return scale * (((requests - 1) // 100) * 60.0 + ((requests - 1) % 100) / 10)


def replace_section(path: Path, name: str, body: str) -> None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else (text.rstrip() + "\n\n" + block)
    )
    path.write_text(text, encoding="utf-8")


def ledger(db: Path, run_id: str) -> int:
    """What the run's ledger says it was billed: its charges and adjustments."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "select coalesce(sum(credits), 0) from credit_ledger"
            " where run_id = ? and kind in ('charge', 'adjustment')",
            [run_id],
        ).fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--places", type=int, default=1000)
    parser.add_argument("--scale", type=float, default=1.0, help="rate windows x this")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--section", default=SECTION, help="the RESULTS.md section written")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="research-bench-"))
    path = tmp / "places.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "address", "city", "country"])
        w.writerows(
            [f"u{i}", f"Corner Cafe {i}", f"{i} Elm Street", "Springfield", "USA"]
            for i in range(args.places)
        )
    sandbox = Sandbox(
        SandboxConfig(keys=(KeySpec(key=KEY, credits=10**7),), rate_window_scale=args.scale)
    )
    spec = ResearchSpec(build_specs(FIELDS), verify_identity=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    started = datetime.now(UTC)
    with sandbox.serve() as served:
        limits = RateLimits.for_tier("paid", window_scale=args.scale)
        target = Target(base_url=served.base_url, api_key=Secret(KEY), label="sandbox",
                        limits=limits)  # fmt: skip
        t0 = time.perf_counter()
        db = tmp / "wh.duckdb"
        out = research([str(path)], ResearchOptions(spec=spec), target=target, db=db)
        wall = time.perf_counter() - t0
        stats = sandbox.stats()
    counts: dict[str, Any] = {r: sum(c.values()) for r, c in stats["requests"].items()}
    total = sum(counts.values())
    research_requests = counts.get("POST /v1/deep-research", 0)
    least = -(-args.places // 10)
    bound = limit_seconds(total, args.scale)
    credits = stats["keys"][KEY]["credits"]["charged"]
    twice = research_stats(sandbox.backend)["billed_twice"]
    lines = [
        "# Deep research: 1,000 places x 3 fields with verify_identity",
        "",
        f"- command: `python3 -m uv run --frozen python bench/research_bench.py --places"
        f" {args.places} --scale {args.scale:g} --section {args.section}` (commit {commit});"
        f" date {started.isoformat(timespec='seconds')};"
        f" {platform.machine()}, Python {platform.python_version()}",
        f"- fields: {', '.join(FIELDS)}; the sandbox's default 1% of rows fail (free)",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| places researched | {out.submitted:,} |",
        f"| research requests (sandbox) | {research_requests:,} (1 estimate_only + "
        f"{research_requests - 1:,} of up to 10 places) |",
        f"| all requests (sandbox: research, usage, pricing) | {total:,} |",
        f"| least possible (1 per 10 places) | {least:,} |",
        f"| requests / least | **{total / least:.3f}x** (target 1.05x) |",
        f"| wall time | {wall:,.1f} s |",
        f"| rate-limit bound for {total:,} requests (10/s, 100/min x {args.scale:g}) |"
        f" {bound:,.1f} s |",
        f"| wall / bound | {wall / bound:.2f}x |" if bound else "| wall / bound | n/a |",
        f"| credits estimated / charged (sandbox) / usage delta | {out.credits_estimated:,}"
        f" / {credits:,} / {'unknown' if out.usage_delta is None else f'{out.usage_delta:,}'} |",
        f"| ledger (charge + adjustment) | {ledger(db, out.run_id):,} |",
        f"| rows failed (free; estimate - charge = failed x 4) | {out.failed:,} |",
        f"| rate-limited (429) by the sandbox | {stats['keys'][KEY]['rate_limited']} |",
        f"| places or fields billed twice | {len(twice)} |",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        replace_section(RESULTS, args.section, body)


if __name__ == "__main__":
    main()
