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
6. with --rows-10m: 10M unique rows (wall, CPU, peak RSS, rows accounted, credits per place).

The 1-minute load average is printed before every measured run and written beside the figures.

    python3 -m uv run --frozen python bench/pipeline_bench.py [--sizes 10000,100000,1000000]
        [--real-rows 100000] [--rate 2000] [--repeat 3] [--rows-10m] [--quick] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # bench helper, beside this script
import measure
import naive
import report
from overhead_report import loads

from placeflow.config import apply_prefect_defaults
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig

KEY = "sk_bench_paid_key_6b6b"
CHUNK_ROWS = 10_000
FAST_SCALE = 0.001
"""The sandbox's rate windows at its fastest setting: a second lasts 1 ms, a minute 60 ms."""
FAST_LIMITS = f"10/{FAST_SCALE:g}s,100/{60 * FAST_SCALE:g}s"
"""The same windows for the client: the key's limits are not local overhead."""


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
        help="also run the 10M-unique-row scenario (wall, CPU, peak RSS, credits per place)",
    )
    p.add_argument("--big-rows", type=int, default=10_000_000, help="rows of --rows-10m")
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


@contextmanager
def prefect_server(enabled: bool) -> Iterator[tuple[str | None, float]]:
    """One Prefect test server for every pipeline process of the benchmark: (API URL, start s)."""
    if not enabled:
        yield None, 0.0
        return
    apply_prefect_defaults()
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    t0 = time.perf_counter()
    with prefect_test_harness(server_startup_timeout=180):
        yield str(PREFECT_API_URL.value()), time.perf_counter() - t0


@contextmanager
def sandbox(**overrides: Any) -> Iterator[tuple[Sandbox, str]]:
    sb = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY, credits=10**10),), **overrides))
    with sb.serve() as served:
        yield sb, served.base_url
    errors = sb.backend.internal_errors
    if errors:
        raise RuntimeError(f"the sandbox failed internally:\n{errors[-1]}")


class Pipeline:
    """Runs `placeflow run` as a subprocess against a served sandbox, measuring it."""

    def __init__(self, prefect_api: str | None, work: Path) -> None:
        self.prefect_api = prefect_api
        self.work = work

    def run(
        self,
        sb: Sandbox,
        base_url: str,
        csv: Path,
        db: Path,
        *extra: str,
        limits: str | None = None,
    ) -> measure.Run:
        """`limits`: the key's rate limits for the client (PLACEFLOW_RATE_LIMITS), to match a
        sandbox whose windows are scaled; the paid tier's when None."""
        env = dict(os.environ, PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=base_url)
        env.pop("PLACEFLOW_RATE_LIMITS", None)
        if limits:
            env["PLACEFLOW_RATE_LIMITS"] = limits
        if self.prefect_api:
            env["PREFECT_API_URL"] = self.prefect_api
        before = sb.stats()
        served_cpu = measure.own_cpu()  # this process only serves the sandbox meanwhile
        cmd = [
            sys.executable,
            "-m",
            "placeflow.cli",
            "run",
            str(csv),
            "--db",
            str(db),
            "--json",
            "--dedupe",  # the unique inputs are renamed copies at one address: exact, so that
            "exact",  # each stays a place of its own (fuzzy matching: bench/matching_bench.py)
            *extra,
        ]
        child = measure.child(cmd, env=env, cwd=self.work)
        return measure.Run(child, before, sb.stats(), KEY, measure.own_cpu() - served_cpu)


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


def load_average() -> float:
    """The machine's 1-minute load average now (it is shared: printed beside each figure)."""
    return os.getloadavg()[0]


def note(text: str) -> None:
    print(f"[pipeline-bench] {text}", file=sys.stderr, flush=True)


def fast_run(pipe: Pipeline, csv: Path, db: Path) -> measure.Run:
    """One job-route run against a sandbox at its fastest setting, on a new warehouse."""
    with sandbox(rows_per_second=None, rate_window_scale=FAST_SCALE) as (sb, url):
        return pipe.run(sb, url, csv, db, "--route", "job", limits=FAST_LIMITS)


def drop_run(work: Path, run: measure.Run, *dbs: Path) -> None:
    """A repeat's warehouse and result files removed (the disk is not the measure)."""
    shutil.rmtree(work / "runs" / str(run.summary.get("run_id")), ignore_errors=True)
    for db in dbs:
        for path in (db, db.with_name(db.name + ".wal")):
            path.unlink(missing_ok=True)


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


def scenario_big(
    args: argparse.Namespace, pool: inputs.Pool, pipe: Pipeline, work: Path
) -> dict[str, Any]:
    """`--big-rows` unique places (10M), the CSV written a million rows at a time."""
    n, step = args.big_rows, 1_000_000
    csv = work / f"u{n}.csv"
    with csv.open("wb") as f:
        for offset in range(0, n, step):
            part = inputs.unique_frame(pool, min(step, n - offset), offset=offset)
            part.write_csv(f, include_header=offset == 0)
    load = load_average()
    note(f"{n:,} rows written; running (load {load:.1f})")
    run = fast_run(pipe, csv, work / f"u{n}.duckdb")
    note(
        f"{n:,} rows: wall {run.proc.wall:.1f} s, CPU {run.proc.cpu:.1f} s, peak RSS "
        f"{run.proc.peak_rss_mb:,.0f} MB; timings {run.summary.get('timings')}"
    )
    drop_run(work, run, work / f"u{n}.duckdb")
    csv.unlink()
    return {"rows": n, "run": run, "load": load}


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
            results["realistic"] = scenario_realistic(args, pool, pipe, work)
            if pipe is not None:
                results["credits"] = scenario_credits(args, pool, pipe, work)
                results["overhead"] = scenario_overhead(args, pool, pipe, work)
                if args.rows_10m:
                    results["big"] = scenario_big(args, pool, pipe, work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    results["total_seconds"] = time.perf_counter() - t0
    results["loads"].append(load_average())
    note(f"load average {loads(results['loads'])} (start, end)")
    kept = Path(tempfile.gettempdir()) / "pipeline_bench_results.pickle"
    kept.write_bytes(pickle.dumps(results))  # the measures, should rendering them fail
    text = report.render(
        results,
        command=command,
        started=started,
        machine=report.machine(),
        bound=job_schedule_bound,
    )
    write_section(Path(args.out), text)
    sys.stdout.write(text)


def write_section(path: Path, body: str) -> None:
    """This benchmark's block of RESULTS.md replaced, other scripts' sections kept; without
    markers yet, the unmarked text before the first section is this benchmark's old block."""
    start, end = "<!-- pipeline-bench:start -->", "<!-- pipeline-bench:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}\n"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if start in old and end in old:
        head, _, rest = old.partition(start)
        text = head + block + rest.partition(end)[2].removeprefix("\n")
    else:
        first = old.find("<!-- ")
        text = block + ("\n" + old[first:] if first >= 0 else "")
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
