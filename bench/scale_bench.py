"""The pipeline benchmark's two scale scenarios (issue 18), run by bench/pipeline_bench.py:

- `--rows-10m`: `--big-rows` (10M) unique places against the sandbox at its fastest setting:
  wall, CPU and peak RSS of the pipeline process, every input row accounted for in the
  warehouse's own tables (run_rows, rejects, run_places, the outcomes), credits per unique
  place as the sandbox charged them, and the peak RSS against a `--big-ref-rows` (1M) run;
- `--real-limits`: `--limits-rows` unique places against the sandbox at the real service's
  limits (the paid key's 10 requests a second and 100 a minute, its windows unscaled) and the
  benchmark's realistic processing rate (`--rate` rows a second per running job, `--max-running`
  jobs at once), the client with its real (paid-tier) limits: the run's wall time against the
  least time any client needs (`bounds`).

Every input is written a `inputs.write_unique` batch at a time. While a run goes, its RSS and
the load average are sampled every second, and the run is stopped past `--max-rss-mb`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import inputs
import measure
from runner import (
    CHUNK_ROWS,
    FAST_LIMITS,
    FAST_SCALE,
    KEY,
    Pipeline,
    drop_run,
    load_average,
    note,
    sandbox,
)

from placeflow.emulator import Sandbox

SQL = Path(__file__).with_name("sql") / "rows_accounted.sql"
PER_SECOND, PER_MINUTE = 10, 100
"""The paid key's limits (spec, Limits). Result files are fetched from presigned URLs without
the key, and GET /v1/pricing needs no key (spec, Authentication): neither counts against them."""
USAGE_CALLS = 2
"""GET /v1/usage before and after a run: the usage delta the run's credits are checked by."""

ACCOUNT = """
import json, sys, duckdb
db, sql, run_id = sys.argv[1:4]
con = duckdb.connect(db, read_only=True)
con.execute("set variable run_id = ?", [run_id])
cur = con.execute(open(sql).read())
row = cur.fetchone()
print(json.dumps(dict(zip([d[0] for d in cur.description], row))))
"""


def rows_accounted(db: Path, run_id: str, work: Path) -> dict[str, Any]:
    """The warehouse's own counts for the run (bench/sql/rows_accounted.sql), read by a child
    process once the run has ended."""
    c = measure.child([sys.executable, "-c", ACCOUNT, str(db), str(SQL), run_id], cwd=work)
    if c.rc != 0:
        raise RuntimeError(f"counting the run's rows failed:\n{c.stderr[-3000:]}")
    counts: dict[str, Any] = json.loads(c.stdout.strip().splitlines()[-1])
    counts["seconds"] = c.wall
    return counts


def accounted_ok(rows: int, a: dict[str, Any], charged: int) -> dict[str, bool]:
    """Each check that every input row is accounted for and every place paid once."""
    places = a["submitted_keys"]
    return {
        "every input row in run_rows once": a["run_rows"] == rows == a["distinct_row_ords"],
        "dispositions add up to the rows read": a["rejected"] + a["duplicates"]
        + a["skipped_fresh"] + a["held_failing"] + a["submitted"] == rows,
        "every rejected row in rejects": a["rejects"] == a["rejected"]
        and a["rejects_not_in_run_rows"] == 0,
        "every place sent planned once": a["places_planned"] == places == a["submitted"],
        "every place sent answered once": a["outcomes"] == a["outcome_keys"] == places
        and a["submitted_without_outcome"] == 0,
        "succeeded + failed = places sent": a["succeeded"] + a["failed"] == places,
        "charged = succeeded (sandbox)": charged == a["succeeded"] == a["billable"],
    }  # fmt: skip


def sandbox_peak_rss_mb() -> float:
    """This benchmark process's peak RSS (it serves the sandbox, which keeps every result file)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _input(pool: inputs.Pool, n: int, work: Path) -> tuple[Path, float]:
    t0 = time.perf_counter()
    csv = inputs.write_unique(pool, n, work / f"u{n}.csv")
    return csv, time.perf_counter() - t0


def scenario_big(
    args: argparse.Namespace,
    pool: inputs.Pool,
    pipe: Pipeline,
    work: Path,
    reference: measure.Run | None,
    measured: Callable[[dict[str, Any]], None] = lambda out: None,
) -> dict[str, Any]:
    """`--big-rows` unique places at the sandbox's fastest; `reference` is a measured run of
    `--big-ref-rows` (made here, after the big one, when the overhead scenario made none).
    `measured` is given the figures once the big run has ended (before the reference)."""
    out: dict[str, Any] = {"rows": args.big_rows, "ref_rows": args.big_ref_rows}
    csv, out["write_seconds"] = _input(pool, args.big_rows, work)
    out["input_mb"] = csv.stat().st_size / 1e6
    out["load"] = load_average()
    note(
        f"{args.big_rows:,} rows written in {out['write_seconds']:.0f} s; running (load "
        f"{out['load']:.1f})"
    )
    out.update(_fast(pipe, csv, work / "big.duckdb", work, rerun=True))
    csv.unlink()
    out["load_after"] = load_average()
    out["bench_rss_mb"] = sandbox_peak_rss_mb()
    if "error" in out:
        return out  # no reference: nothing complete to compare it with
    measured({**out, "ref": reference})
    if reference is None and args.big_ref_rows:  # after the big run, so that it starts first
        csv, _ = _input(pool, args.big_ref_rows, work)
        out["ref_load"] = load_average()
        note(f"{args.big_ref_rows:,}-row reference run (load {out['ref_load']:.1f})")
        reference = _fast(pipe, csv, work / "ref.duckdb", work).get("run")
        csv.unlink()
    out["ref"] = reference
    run = out["run"]
    note(
        f"{args.big_rows:,} rows: wall {run.proc.wall:.1f} s, CPU {run.proc.cpu:.1f} s, "
        f"peak RSS {run.proc.peak_rss_mb:,.0f} MB; timings {run.summary.get('timings')}"
    )
    return out


def _fast(
    pipe: Pipeline, csv: Path, db: Path, work: Path, *, rerun: bool = False
) -> dict[str, Any]:
    """One run at the sandbox's fastest, its rows accounted, its warehouse then dropped.

    `rerun`: the same command once more on the same warehouse before it is dropped (a user's
    rerun of an unchanged file: fresh outcomes are not bought again, the failed places are
    resent), measured alike, with the sandbox's count of rows it billed twice."""
    with sandbox(rows_per_second=None, rate_window_scale=FAST_SCALE) as (sb, url):
        out = _measured(pipe, sb, url, csv, db, work, limits=FAST_LIMITS, keep=rerun)
        if rerun and "run" in out:
            note("rerun of the same input on the same warehouse")
            again = _measured(pipe, sb, url, csv, db, work, limits=FAST_LIMITS)
            billed = sb.stats()["keys"][KEY]["billed"]
            out["rerun"] = {**again, "rows_billed_twice": billed["rows_billed_twice"]}
            drop_run(work, out["run"], db)  # a rerun that failed left the warehouse
        return out


def _measured(
    pipe: Pipeline,
    sb: Sandbox,
    url: str,
    csv: Path,
    db: Path,
    work: Path,
    *,
    limits: str | None,
    keep: bool = False,
) -> dict[str, Any]:
    """A job-route run, its rows accounted, its warehouse dropped (kept with `keep`); or why
    it did not complete (failed, or stopped past --max-rss-mb) with what its process
    measured."""
    before = sb.stats()
    try:
        run = pipe.run(sb, url, csv, db, "--route", "job", limits=limits)
    except RuntimeError as exc:
        note(f"the run failed: {str(exc)[-3000:]}")
        seen = measure.delta(before, sb.stats(), KEY)  # how far it got, by the sandbox
        return {"error": _why(pipe.last, str(exc)), "proc": pipe.last, "sandbox": seen}
    accounted = rows_accounted(db, str(run.summary["run_id"]), work)
    drop_run(work, run, *(() if keep else (db,)))  # its result files go either way
    return {"run": run, "accounted": accounted}


def _why(proc: measure.Child | None, text: str) -> str:
    """One line on why a run did not complete: the watcher's stop, the run's own JSON message,
    or the last line of its error output."""
    if proc is None:
        return text.splitlines()[0]
    if proc.stopped:
        return f"stopped by the benchmark: {proc.stopped}"
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return f"exit {proc.rc}: {json.loads(line).get('message')}"
            except ValueError:
                break
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return f"exit {proc.rc}: {lines[-1] if lines else 'no output'}"


def scenario_limits(
    args: argparse.Namespace, pool: inputs.Pool, pipe: Pipeline, work: Path
) -> dict[str, Any]:
    """`--limits-rows` unique places, the sandbox and the client at the real limits (the
    client's: the paid tier's own, PLACEFLOW_RATE_LIMITS unset)."""
    n = args.limits_rows
    csv, write_seconds = _input(pool, n, work)
    out: dict[str, Any] = {"rows": n, "write_seconds": write_seconds, "load": load_average()}
    note(f"real limits, {n:,} rows (load {out['load']:.1f}); bounds {bounds(n, args)}")
    with sandbox(rows_per_second=args.rate, max_running_jobs=args.max_running) as (sb, url):
        out.update(_measured(pipe, sb, url, csv, work / "limits.duckdb", work, limits=None))
    csv.unlink()
    out["load_after"] = load_average()
    if "error" in out:
        return out
    run = out["run"]
    out["bounds"] = bounds(run.summary["submitted"], args)
    note(
        f"real limits, {n:,} rows: wall {run.proc.wall:.1f} s, flow "
        f"{run.summary['seconds']:.1f} s, CPU {run.proc.cpu:.1f} s; requests "
        f"{run.sandbox['routes']}"
    )
    return out


def request_time(k: int) -> float:
    """Seconds from a key's first request to its k-th, at 10 a second and 100 a minute."""
    if k <= 0:
        return 0.0
    return (k - 1) // PER_MINUTE * 60.0 + (k - 1) % PER_MINUTE / PER_SECOND


def bounds(places: int, args: argparse.Namespace) -> dict[str, float | int]:
    """The least time any client needs to send `places` in 10,000-place jobs, from its first
    request to the end:

    - request: every keyed request it must make (a submit and a poll per job, the usage before
      and after) at the key's limits;
    - processing: the jobs processed back to back (`--rate` rows a second, `--max-running` at
      once), as if all were submitted at once;
    - schedule: both at once: job i submitted no earlier than the key's (i+2)-th request (the
      usage call first), processed FIFO on the running slots, and its poll after it ends;
    - bound: the largest of the three."""
    sizes = [min(CHUNK_ROWS, places - i) for i in range(0, places, CHUNK_ROWS)]
    jobs = len(sizes)
    keyed = 2 * jobs + USAGE_CALLS
    free = [0.0] * args.max_running
    for rows in sizes:
        i = free.index(min(free))
        free[i] += rows / args.rate
    processing = max(free)
    free = [0.0] * args.max_running
    last_poll = 0.0
    for j, rows in enumerate(sizes):
        i = free.index(min(free))
        free[i] = max(free[i], request_time(j + 2)) + rows / args.rate
        last_poll = max(last_poll, free[i])
    schedule = max(last_poll, request_time(keyed))
    request = request_time(keyed)
    return {
        "jobs": jobs,
        "keyed_requests": keyed,
        "request": request,
        "request_with_files": request_time(keyed + jobs),
        "processing": processing,
        "schedule": schedule,
        "bound": max(request, processing, schedule),
    }
