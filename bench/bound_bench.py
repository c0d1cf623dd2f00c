"""The 100,000-row job-route flow against the service's bound, for this checkout and others (#47).

    .venv/bin/python bench/bound_bench.py [--tree before=PATH] [--rows 100000] [--repeat 1]

The scenario of the pipeline benchmark's section 2 (bench/pipeline_bench.py), alone: a sandbox
on loopback at the realistic rate (2,000 rows a second per running job, 2 jobs running at once,
the paid key's real limits), `placeflow run INPUT --db NEW --json --dedupe exact --route job`
as a Prefect flow run on one shared Prefect test server, for each tree (placeflow imported from
PATH/src; `after` is this checkout), the trees interleaved. The bound is the jobs' processing
back to back on the 2 slots (`pipeline_bench.job_schedule_bound`); the flow's own time is the
run summary's `seconds`. Prints a markdown table (nothing is written to RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # bench helpers, beside this script
from pipeline_bench import job_schedule_bound
from runner import Pipeline, load_average, prefect_server, sandbox

HERE = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tree", action="append", default=[], help="NAME=PATH of another checkout")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--rate", type=float, default=2_000.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--workdir", default=None)
    args = p.parse_args(argv)
    trees = {name: Path(path) for name, _, path in (t.partition("=") for t in args.tree)}
    trees["after"] = HERE
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bound_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    csv = inputs.write(inputs.unique_frame(inputs.load_pool(), args.rows), work / "real.csv")
    jobs, bound = job_schedule_bound(args.rows, args.rate, 2)
    lines = [
        "| tree | flow s | x bound | process wall s | CPU s | requests | status | load |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    with prefect_server(True) as (prefect_api, _):
        pipe = Pipeline(prefect_api, work)
        for i in range(args.repeat):
            for name, tree in trees.items():
                os.environ["PYTHONPATH"] = str(tree / "src")
                load = load_average()
                with sandbox(rows_per_second=args.rate, max_running_jobs=2) as (sb, url):
                    run = pipe.run(sb, url, csv, work / f"{name}-{i}.duckdb", "--route", "job")
                flow = float(run.summary.get("seconds") or 0.0)
                requests = run.sandbox["total"]
                lines.append(
                    f"| {name} | {flow:.1f} | {flow / bound:.2f} | {run.proc.wall:.1f} |"
                    f" {run.proc.cpu:.1f} | {requests} | {run.summary.get('status')} |"
                    f" {load:.1f} |"
                )
                print(lines[-1], file=sys.stderr, flush=True)
    os.environ.pop("PYTHONPATH", None)
    print(
        f"{args.rows:,} unique rows in {jobs} jobs at {args.rate:,.0f} rows/s each, 2 at once:"
        f" bound {bound:.1f} s\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
