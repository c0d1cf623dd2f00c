"""How far ahead of a one-request-per-place loop placeflow is, and how close to the limits.

Builds its inputs from real place data (the airports of the `airportsdata` package when it is
installed, and the sample restaurants), serves sandboxes on loopback from this process, runs the
pipeline as a user does (`python -m placeflow.cli run FILE --db DB --json`, a subprocess whose
wall time, CPU time and peak RSS are measured apart from the sandbox's), and writes
bench/RESULTS.md. One Prefect server is started once for the whole benchmark and shared by
every pipeline process. Its section of bench/RESULTS.md lies between pipeline-bench markers
(other scripts' sections are kept). Measured, side by side:

1. requests per 1,000 input rows, counted by the sandbox: the pipeline's job route, its sync
   route, a naive one-request-per-place loop and an enrich-batch-of-10 loop;
2. wall time of the job route against the least possible time at a realistic processing rate;
3. local overhead at the sandbox's fastest setting against a bare DuckDB baseline, each size
   run --repeat times (min and median), with the run summary's own `timings` per stage;
4. peak RSS of the pipeline process per input size;
5. credits per unique valid place on a first run (unique and 30%-duplicates inputs) and on an
   unchanged rerun;

With --rows-10m and --real-limits, bench/scale_bench.py's two scale scenarios run too, each
writing a section of its own (pipeline-bench-10m, pipeline-bench-limits markers): 10M unique rows
at the sandbox's fastest (wall, CPU, peak RSS against a 1M run, every row accounted, credits
per place), and a run at the real service's limits against the least time any client needs.
--skip-main runs only those (sections 1-5 and their block are left as they are); --big-rows and
--limits-rows size them (e.g. 2000000 and 1000000 while developing).

The 1-minute load average is printed before every measured run and written beside the figures.

    python3 -m uv run --frozen python bench/pipeline_bench.py [--sizes 10000,100000,1000000]
        [--real-rows 100000] [--rate 2000] [--repeat 3] [--quick] [--smoke]
        [--rows-10m [--big-rows N] [--big-ref-rows N]] [--real-limits [--limits-rows N]]
        [--skip-main] [--max-rss-mb 8192] [--max-run-s S]
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # bench helper, beside this script
import measure
import naive
import report
import scale_bench
import scale_report
from overhead_report import loads
from runner import (  # KEY, prefect_server, sandbox: names other bench scripts import from here
    CHUNK_ROWS,
    FAST_LIMITS,
    FAST_SCALE,
    KEY,
    Pipeline,
    drop_run,
    fast_run,
    load_average,
    note,
    prefect_server,
    sandbox,
    write_section,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="input sizes (rows) for local overhead and memory (comma-separated)",
    )
    p.add_argument(
        "--real-rows",
        type=int,
        default=100_000,
        help="rows of the realistic-rate run (requests and wall time vs bound)",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=2_000.0,
        help="sandbox rows per second per running job in the realistic-rate run",
    )
    p.add_argument("--max-running", type=int, default=2, help="sandbox running-job cap")
    p.add_argument(
        "--sample",
        type=int,
        default=500,
        help="rows sent by the sync route and the naive loops (projected beyond)",
    )
    p.add_argument(
        "--naive-scale",
        type=float,
        default=0.01,
        help="rate-window scale for the naive loops' sample (wall time is projected)",
    )
    p.add_argument("--dup-rows", type=int, default=100_000, help="rows of the duplicates input")
    p.add_argument("--dup-share", type=float, default=0.30, help="share of duplicate rows")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smaller run: sizes 10000,100000, real/dup rows 20000, sample 200",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes and no Prefect-backed pipeline runs: proves the script works",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of each overhead size, each with its own baseline (min and median)",
    )
    p.add_argument(
        "--rows-10m",
        action="store_true",
        help="also run the 10M-unique-row scenario (wall, CPU, peak RSS, rows accounted, "
        "credits per place; section pipeline-bench-10m)",
    )
    p.add_argument("--big-rows", type=int, default=10_000_000, help="rows of --rows-10m")
    p.add_argument(
        "--big-ref-rows",
        type=int,
        default=1_000_000,
        help="rows of the reference run --rows-10m's peak RSS is compared with (the overhead "
        "scenario's run of that size when it made one; 0: none)",
    )
    p.add_argument(
        "--real-limits",
        action="store_true",
        help="also run at the real service's limits (sandbox and client), wall against the "
        "least time any client needs (section pipeline-bench-limits)",
    )
    p.add_argument("--limits-rows", type=int, default=10_000_000, help="rows of --real-limits")
    p.add_argument(
        "--skip-main",
        action="store_true",
        help="run only --rows-10m / --real-limits; sections 1-5 are not run nor rewritten",
    )
    p.add_argument(
        "--max-rss-mb",
        type=float,
        default=8192.0,
        help="a scale run is stopped once its RSS passes this (reported as not completed)",
    )
    p.add_argument(
        "--max-run-s",
        type=float,
        default=None,
        help="a scale run is stopped once it has run this long (reported as not completed)",
    )
    p.add_argument("--workdir", default=None, help="keep inputs and warehouses here")
    p.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.real_rows, args.dup_rows, args.sample = "10000,100000", 20_000, 20_000, 200
    if args.smoke:
        args.sizes, args.real_rows, args.dup_rows, args.sample = "300", 300, 300, 30
        args.repeat = 1
    args.size_list = [int(s) for s in args.sizes.split(",") if s.strip()]
    return args


def job_schedule_bound(places: int, rate: float, slots: int) -> tuple[int, float]:
    """(jobs, least seconds): chunks of 10,000 run FIFO on `slots` slots at `rate` rows/s each."""
    sizes = [min(CHUNK_ROWS, places - i) for i in range(0, places, CHUNK_ROWS)]
    free = [0.0] * slots
    for rows in sizes:
        i = free.index(min(free))
        free[i] += rows / rate
    return len(sizes), max(free) if sizes else 0.0


def scenario_realistic(
    args: argparse.Namespace, pool: inputs.Pool, pipe: Pipeline | None, work: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    csv = inputs.write(inputs.unique_frame(pool, args.real_rows), work / "real.csv")
    sample_csv = inputs.write(
        inputs.unique_frame(pool, args.sample, offset=args.real_rows), work / "sample.csv"
    )
    if pipe is not None:
        with sandbox(rows_per_second=args.rate, max_running_jobs=args.max_running) as (sb, url):
            out["job"] = pipe.run(sb, url, csv, work / "real.duckdb", "--route", "job")
            out["job_rerun"] = pipe.run(sb, url, csv, work / "real.duckdb", "--route", "job")
            out["sync"] = pipe.run(sb, url, sample_csv, work / "sync.duckdb", "--route", "sync")
    for batch in (1, 10):
        with sandbox(rate_window_scale=args.naive_scale) as (sb, url):
            before = sb.stats()
            loop = naive.run_loop(
                base_url=url,
                api_key=KEY,
                path=sample_csv,
                rows=args.sample,
                batch=batch,
                window_scale=args.naive_scale,
            )
            out[f"naive{batch}"] = (loop, measure.delta(before, sb.stats(), KEY))
    return out


def scenario_credits(
    args: argparse.Namespace, pool: inputs.Pool, pipe: Pipeline, work: Path
) -> dict[str, Any]:
    frame, unique = inputs.with_duplicates(pool, args.dup_rows, args.dup_share)
    csv = inputs.write(frame, work / "dups.csv")
    with sandbox(rate_window_scale=FAST_SCALE) as (sb, url):
        first = pipe.run(sb, url, csv, work / "dups.duckdb", "--route", "job", limits=FAST_LIMITS)
        rerun = pipe.run(sb, url, csv, work / "dups.duckdb", "--route", "job", limits=FAST_LIMITS)
    return {"first": first, "rerun": rerun, "unique": unique, "rows": frame.height}


def scenario_overhead(
    args: argparse.Namespace, pool: inputs.Pool, pipe: Pipeline, work: Path
) -> list[dict[str, Any]]:
    """Each size `--repeat` times: a run on a new warehouse, then the bare DuckDB baseline
    over the same input and that run's result files."""
    rows = []
    for n in args.size_list:
        csv = inputs.write(inputs.unique_frame(pool, n), work / f"u{n}.csv")
        row: dict[str, Any] = {"rows": n, "runs": [], "baselines": [], "loads": []}
        for i in range(args.repeat):
            row["loads"].append(load_average())
            db = work / f"u{n}-{i}.duckdb"
            run = fast_run(pipe, csv, db)
            files = f"{work}/runs/{run.summary.get('run_id')}/chunk-*/*.jsonl.gz"
            base = measure.baseline(csv, files, work / f"base{n}-{i}.duckdb", cwd=work)
            note(
                f"{n:,} rows, run {i + 1}/{args.repeat}: wall {run.proc.wall:.1f} s, CPU "
                f"{run.proc.cpu:.1f} s, peak RSS {run.proc.peak_rss_mb:,.0f} MB; baseline wall "
                f"{base['proc'].wall:.1f} s, CPU {base['proc'].cpu:.1f} s; load "
                f"{row['loads'][-1]:.1f}; timings {run.summary.get('timings')}"
            )
            row["runs"].append(run)
            row["baselines"].append(base)
            drop_run(work, run, db, work / f"base{n}-{i}.duckdb")
        by_wall = sorted(range(args.repeat), key=lambda k: row["runs"][k].proc.wall)
        mid = by_wall[len(by_wall) // 2]
        row["run"], row["baseline"] = row["runs"][mid], row["baselines"][mid]  # the median run
        rows.append(row)
        csv.unlink()
    return rows


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started = datetime.now(UTC)
    command = report.command_line(argv if argv is not None else sys.argv[1:])
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pipeline_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    pool = inputs.load_pool()
    results: dict[str, Any] = {"pool": pool.source, "args": args, "loads": [load_average()]}
    note(f"load average {results['loads'][0]:.1f} at the start")
    t0 = time.perf_counter()
    try:
        with prefect_server(not args.smoke) as (prefect_api, prefect_start):
            results["prefect_start"] = prefect_start
            pipe = Pipeline(prefect_api, work) if not args.smoke else None
            if not args.skip_main:
                results["realistic"] = scenario_realistic(args, pool, pipe, work)
            if pipe is not None and not args.skip_main:
                results["credits"] = scenario_credits(args, pool, pipe, work)
                results["overhead"] = scenario_overhead(args, pool, pipe, work)
            if pipe is not None:
                watched = Pipeline(prefect_api, work, args.max_rss_mb, args.max_run_s)
                if args.real_limits:  # the shorter first; each section written once measured
                    results["limits"] = scale_bench.scenario_limits(args, pool, watched, work)
                    write_scale(results, args, "limits", command=command, started=started)
                if args.rows_10m:
                    ref = reference_run(results.get("overhead", []), args.big_ref_rows)
                    results["big"] = scale_bench.scenario_big(
                        args,
                        pool,
                        watched,
                        work,
                        ref,
                        lambda big: early(big, pool.source, args, command, started),
                    )
                    write_scale(results, args, "big", command=command, started=started)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    results["total_seconds"] = time.perf_counter() - t0
    results["loads"].append(load_average())
    note(f"load average {loads(results['loads'])} (start, end)")
    kept = Path(tempfile.gettempdir()) / f"pipeline_bench_results-{os.getpid()}.pickle"
    note(f"measures kept in {kept}")
    kept.write_bytes(pickle.dumps(results))  # the measures, should rendering them fail
    write(results, args, command=command, started=started)


def reference_run(overhead: list[dict[str, Any]], rows: int) -> measure.Run | None:
    """The overhead scenario's run of `rows` with the highest peak RSS, if it made any."""
    runs = [run for row in overhead if row["rows"] == rows for run in row["runs"]]
    return max(runs, key=lambda r: r.proc.peak_rss_mb) if runs else None


def write(results: dict[str, Any], args: argparse.Namespace, *, command: str, started: Any) -> None:
    """Sections 1-5 written to --out when this invocation measured them (the others kept)."""
    if "realistic" in results:
        text = report.render(
            results,
            command=command,
            started=started,
            machine=report.machine(),
            bound=job_schedule_bound,
        )
        write_section(Path(args.out), text)
        sys.stdout.write(text)


def early(
    big: dict[str, Any], pool: str, args: argparse.Namespace, command: str, started: Any
) -> None:
    """The big run's section written as soon as it ends, before its reference run."""
    write_scale(
        {"big": big, "pool": pool},
        args,
        "big",
        command=command,
        started=started,
    )


def write_scale(
    results: dict[str, Any], args: argparse.Namespace, which: str, *, command: str, started: Any
) -> None:
    """A scale scenario's own section written to --out as soon as it is measured."""
    scenario = results[which]
    n = scenario["rows"]
    if which == "big":
        title, name = f"{n:,} unique rows (`--rows-10m`)", "pipeline-bench-10m"
    else:
        title, name = (
            f"{n:,} unique rows at the real limits (`--real-limits`)",
            "pipeline-bench-limits",
        )
    head = scale_report.header(
        f"placeflow pipeline benchmark: {title}",
        command,
        started,
        report.machine(),
        results["pool"],
    )
    if which == "big":
        text = scale_report.big_section(scenario, head)
    else:
        text = scale_report.limits_section(scenario, head, args.rate, args.max_running)
    write_section(Path(args.out), text, name)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
