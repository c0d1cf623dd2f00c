"""How fast the sandbox processes bulk jobs at its fastest setting, over real loopback HTTP.

Submits JOBS jobs of ROWS places each to a sandbox served on loopback with jobs finishing at
once, polls each to completion, downloads and verifies every result file, and reports rows per
second: end to end (submit + poll + download) and for the processing alone (building, gzipping
and hashing the result files, timed inside the sandbox). Writes bench/sandbox_throughput.md.

    python3 -m uv run --frozen python bench/sandbox_throughput.py [--jobs 10] [--rows 10000]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.emulator import jobs as jobs_module

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--kind", choices=("validate", "enrich"), default="enrich")
    args = parser.parse_args()

    render_seconds = 0.0
    original = jobs_module.Job.render

    def timed_render(self: jobs_module.Job, settings: object) -> jobs_module.ResultFile:
        nonlocal render_seconds
        t = time.perf_counter()
        out = original(self, settings)  # type: ignore[arg-type]
        render_seconds += time.perf_counter() - t
        return out

    jobs_module.Job.render = timed_render  # type: ignore[method-assign]
    config = SandboxConfig(
        keys=(KeySpec(key=KEY, credits=10**9),), rows_per_second=None, rate_window_scale=0.001
    )
    sandbox = Sandbox(config)
    bodies = [json.dumps({"pois": places(j, args.rows)}).encode() for j in range(args.jobs)]
    total = args.jobs * args.rows
    with (
        sandbox.serve() as srv,
        httpx.Client(base_url=srv.base_url, timeout=120, headers={"X-API-Key": KEY}) as api,
    ):
        t0 = time.perf_counter()
        for j, body in enumerate(bodies):
            r = api.post(
                f"/v1/jobs/{args.kind}",
                content=body,
                headers={"Idempotency-Key": f"bench-{j}", "Content-Type": "application/json"},
            )
            r.raise_for_status()
            status = api.get(f"/v1/jobs/{r.json()['batch_id']}").json()
            assert status["status"] == "completed", status
            f = status["results"]["files"][0]
            data = httpx.get(f["url"], timeout=120).content
            assert hashlib.sha256(data).hexdigest() == f["sha256"]
            assert len(gzip.decompress(data).splitlines()) == args.rows
        elapsed = time.perf_counter() - t0
    end_to_end = total / elapsed
    processing = total / render_seconds
    lines = [
        "# Sandbox throughput at its fastest setting",
        "",
        f"- command: `python3 -m uv run --frozen python bench/sandbox_throughput.py "
        f"--jobs {args.jobs} --rows {args.rows} --kind {args.kind}`",
        f"- date: {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}",
        f"- work: {args.jobs} {args.kind} jobs x {args.rows:,} rows = {total:,} rows, over "
        "loopback HTTP, each file downloaded and sha256-verified",
        "",
        "| measure | rows per second |",
        "|---|---|",
        f"| processing (build, gzip, sha256 of files, in the sandbox) | {processing:,.0f} |",
        f"| end to end (submit, status, download, verify, client included) | {end_to_end:,.0f} |",
        "",
    ]
    out = Path(__file__).with_name("sandbox_throughput.md")
    out.write_text("\n".join(lines))
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()
