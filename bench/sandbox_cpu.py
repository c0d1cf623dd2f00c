"""The sandbox's own cost of answering a bulk run: CPU seconds, and how long the poll that first
sees a job completed takes (the result file must be ready by then).

The sandbox is served on loopback from a child process (as beside a pipeline run); this process
is the client: it submits JOBS enrich jobs of 10,000 places built from a CSV (id, name, address,
city, state, country, lat, lon, as /tmp/pf/u1m.csv), polls each once its eta has passed,
downloads and checks every file. Prints one JSON document.

Run: python3 -m uv run --frozen python bench/sandbox_cpu.py CSV [--jobs 100] [--rate R]
  (no --rate: jobs finish at submission, the sandbox's fastest setting)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import httpx
import polars as pl

KEY = "sk_bench_key_0000000000000000"
ROWS = 10_000
ATTRIBUTES = ["opening_hours", "phone", "website", "existence", "open_closed"]
CHILD = r"""
import json, resource, sys
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
rate = None if sys.argv[1] == "none" else float(sys.argv[1])
config = SandboxConfig(keys=(KeySpec(key=sys.argv[2], credits=10**10),), rate_window_scale=0.001,
                       rows_per_second=rate)
sb = Sandbox(config)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
with sb.serve() as served:
    print(json.dumps({"base": served.base_url}), flush=True)
    start = cpu()
    sys.stdin.read()
    used = cpu() - start
stats = sb.stats()
print(json.dumps({"cpu_s": round(used, 2), "files": stats.get("files"),
                  "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "internal_errors": stats["internal_errors"]}), flush=True)
"""


def bodies(csv: str, jobs: int) -> list[bytes]:
    """Job bodies shaped as placeflow sends them: one JSON object per place, `id` first."""
    df = pl.read_csv(csv, n_rows=jobs * ROWS, infer_schema_length=0).select(
        pl.format("pk_{}", "id").alias("id"),
        pl.col("name").alias("poi_name"),
        pl.lit(None, pl.String).alias("street"),
        pl.when(pl.col("address") == "").then(None).otherwise("address").alias("address"),
        "city",
        pl.col("state").alias("region"),
        pl.lit(None, pl.String).alias("postcode"),
        "country",
        pl.col("lat").cast(pl.Float64).alias("latitude"),
        pl.col("lon").cast(pl.Float64).alias("longitude"),
    )
    extra = f',"attributes":{json.dumps(ATTRIBUTES)}}}'
    request = pl.struct(pl.all()).struct.json_encode().str.strip_suffix("}") + pl.lit(extra)
    places = df.select(request.alias("r"))["r"]
    return [
        ('{"pois":[' + ",".join(places[j * ROWS : (j + 1) * ROWS].to_list()) + "]}").encode()
        for j in range(jobs)
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--rate", type=float, default=None, help="rows/s per running job")
    args = p.parse_args()
    payloads = bodies(args.csv, args.jobs)
    load = [os.getloadavg()[0]]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, "none" if args.rate is None else str(args.rate), KEY],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    base = json.loads(child.stdout.readline())["base"]
    started = time.perf_counter()
    completing: list[float] = []
    with httpx.Client(base_url=base, headers={"x-api-key": KEY}, timeout=300) as http:
        batches = []
        for body in payloads:
            r = http.post(
                "/v1/jobs/enrich", content=body, headers={"content-type": "application/json"}
            )
            r.raise_for_status()
            batches.append(r.json()["batch_id"])
        for batch in batches:
            while True:
                t0 = time.perf_counter()
                status = http.get(f"/v1/jobs/{batch}").json()
                if status["status"] in ("completed", "failed", "cancelled"):
                    completing.append(time.perf_counter() - t0)
                    break
                time.sleep(max(0.05, status["eta_seconds"]))
            entry = status["results"]["files"][0]
            data = http.get(entry["url"]).content
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    wall = time.perf_counter() - started
    out, _ = child.communicate("")
    load.append(os.getloadavg()[0])
    sandbox = json.loads(out.strip().splitlines()[-1])
    print(
        json.dumps(
            {
                "jobs": args.jobs,
                "rows": args.jobs * ROWS,
                "rate": args.rate,
                "wall_s": round(wall, 1),
                "sandbox": sandbox,
                "completing_poll_s": {
                    "sum": round(sum(completing), 2),
                    "max": round(max(completing), 3),
                },
                "load_1min": [round(x, 2) for x in load],
            }
        )
    )


if __name__ == "__main__":
    main()
