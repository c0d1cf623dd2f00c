"""How fast the sandbox processes bulk jobs at its fastest setting, over real loopback HTTP.

For each job kind, submits JOBS jobs of ROWS places each to a sandbox served on loopback with
jobs finishing at once, asks each job's status, downloads and verifies every result file, and
reports rows per second: for the processing alone (building, gzipping and hashing the result
files, timed inside the sandbox) and end to end. Writes bench/sandbox_throughput.md.

    python3 -m uv run --frozen python bench/sandbox_throughput.py [--jobs 10] [--rows 10000]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.emulator import jobs as jobs_module
from placeflow.emulator.synth import SynthSettings

KEY = "sk_bench_key_0000"


def places(job: int, rows: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"{job}-{i}",
            "poi_name": f"Bench Place {job}-{i}",
            "street": f"{i} Main St",
            "city": "Springfield",
            "country": "US",
            "latitude": 40 + i / 1e5,
            "longitude": -74 - i / 1e5,
        }
        for i in range(rows)
    ]


def measure(kind: str, jobs: int, rows: int) -> tuple[float, float]:
    """Rows per second for one kind: (processing inside the sandbox, end to end)."""
    render_seconds = 0.0
    original = jobs_module.Job.render

    def timed_render(self: jobs_module.Job, settings: SynthSettings) -> jobs_module.ResultFile:
        nonlocal render_seconds
        t = time.perf_counter()
        out = original(self, settings)
        render_seconds += time.perf_counter() - t
        return out

    jobs_module.Job.render = timed_render  # type: ignore[method-assign]  # timed, then put back
    try:
        config = SandboxConfig(
            keys=(KeySpec(key=KEY, credits=10**9),), rows_per_second=None, rate_window_scale=0.001
        )
        sandbox = Sandbox(config)
        bodies = [json.dumps({"pois": places(j, rows)}).encode() for j in range(jobs)]
        with (
            sandbox.serve() as srv,
            httpx.Client(base_url=srv.base_url, timeout=120, headers={"X-API-Key": KEY}) as api,
        ):
            t0 = time.perf_counter()
            for j, body in enumerate(bodies):
                r = api.post(
                    f"/v1/jobs/{kind}",
                    content=body,
                    headers={"Idempotency-Key": f"bench-{j}", "Content-Type": "application/json"},
                )
                r.raise_for_status()
                status = api.get(f"/v1/jobs/{r.json()['batch_id']}").json()
                assert status["status"] == "completed", status
                f = status["results"]["files"][0]
                data = httpx.get(f["url"], timeout=120).content
                assert hashlib.sha256(data).hexdigest() == f["sha256"]
                assert len(gzip.decompress(data).splitlines()) == rows
            elapsed = time.perf_counter() - t0
    finally:
        jobs_module.Job.render = original  # type: ignore[method-assign]  # put back
    total = jobs * rows
    return total / render_seconds, total / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    results = {kind: measure(kind, args.jobs, args.rows) for kind in ("validate", "enrich")}
    total = args.jobs * args.rows
    lines = [
        "# Sandbox throughput at its fastest setting",
        "",
        f"- command: `python3 -m uv run --frozen python bench/sandbox_throughput.py "
        f"--jobs {args.jobs} --rows {args.rows}`",
        f"- date: {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}",
        f"- work per kind: {args.jobs} jobs x {args.rows:,} rows = {total:,} rows, over loopback "
        "HTTP, each result file downloaded and sha256-verified",
        "- processing: building the result lines, gzip and sha256 of the files, timed inside "
        "the sandbox; end to end: submit (the sandbox parses and validates every row), status, "
        "download and verify, client included",
        "",
        "| job kind | processing, rows/s | end to end, rows/s |",
        "|---|---:|---:|",
        *(
            f"| {kind} (default attributes) | {p:,.0f} | {e:,.0f} |"
            if kind == "enrich"
            else f"| {kind} | {p:,.0f} | {e:,.0f} |"
            for kind, (p, e) in results.items()
        ),
        "",
    ]
    out = Path(__file__).with_name("sandbox_throughput.md")
    out.write_text("\n".join(lines))
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()
