"""The local cost of a run against its floors, before and after, measured side by side (#47).

Two scenarios, each for every tree given (`--tree NAME=PATH`: placeflow imported from
PATH/src, as the commit checked out there has it; `after` is this checkout), interleaved so
that the trees meet the same load on this shared machine:

1. small: a 10-row run on a new warehouse (`python -m placeflow.cli run TEN --db NEW --json`,
   the embedded sandbox in the process, no Prefect) against a bare process importing duckdb,
   polars and httpx; CPU (user+sys of the process, wait4) median of `--repeat`;
2. job route: a `--rows`-row run with exact dedupe against a sandbox on loopback answering at
   once (its rate windows scaled 0.001, the client's alike: bench/runner.fast_run), against a
   bare DuckDB process reading the same CSV and the run's result files (bench/measure.baseline).

Its section of bench/RESULTS.md lies between local-cost markers.

    .venv/bin/python bench/local_cost_bench.py [--tree before=/path/to/old/checkout]
        [--repeat 3] [--rows 300000] [--job-repeat 1] [--big-rows 1000000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # bench helpers, beside this script
import measure
import report
from runner import Pipeline, drop_run, fast_run, load_average, write_section

HERE = Path(__file__).resolve().parents[1]
FLOOR = "import duckdb, polars, httpx"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tree", action="append", default=[], help="NAME=PATH of another checkout")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--job-repeat", type=int, default=1,
        help="runs of each tree at --rows (a median row is added when more than one)",
    )  # fmt: skip
    p.add_argument("--rows", type=int, default=300_000, help="job-route run size (0: skip)")
    p.add_argument("--big-rows", type=int, default=0, help="one more size, run once (0: skip)")
    p.add_argument("--workdir", default=None)
    p.add_argument("--no-write", action="store_true", help="print the section only")
    return p.parse_args(argv)


def env_for(tree: Path | None) -> dict[str, str]:
    """The environment of a measured process: no placeflow or Prefect settings, and bytecode
    written and read as an installed package's is (PYTHONDONTWRITEBYTECODE dropped: with it,
    every process compiles every module again, a cost no user's process pays twice)."""
    drop = ("PLACEFLOW_", "PREFECT_API", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
    return env


def small(trees: dict[str, Path], work: Path, repeat: int) -> dict[str, Any]:
    """CPU of the bare import and of a 10-row run, per tree, interleaved."""
    ten = work / "ten.csv"
    ten.write_text(
        "id,name,address,city,country\n"
        + "".join(f"u{i},Corner Shop {i},{i} Elm Street,Springfield,USA\n" for i in range(10))
    )
    out: dict[str, Any] = {"floor": [], **{name: [] for name in trees}, "loads": []}
    for i in range(-1, repeat):  # -1: a first run of each, not counted (bytecode written)
        if i >= 0:
            out["loads"].append(load_average())
        floor = measure.child([sys.executable, "-c", FLOOR], env=env_for(None), cwd=work)
        if i >= 0:
            out["floor"].append(floor.cpu)
        for name, tree in trees.items():
            db = work / f"small-{name}-{i + 1}" / "wh.duckdb"
            cmd = [sys.executable, "-m", "placeflow.cli", "run", str(ten), "--db", str(db)]
            run = measure.child([*cmd, "--json"], env=env_for(tree), cwd=work)
            if run.rc != 0:
                raise RuntimeError(f"{name}: the 10-row run failed:\n{run.stderr[-3000:]}")
            if i >= 0:
                out[name].append(run.cpu)
                out.setdefault(f"{name}-wall", []).append(run.wall)
    return out


def job_route(trees: dict[str, Path], work: Path, rows: int, repeat: int) -> dict[str, Any]:
    """CPU and peak RSS of a job-route run and its bare DuckDB baseline, per tree."""
    pool = inputs.load_pool()
    csv = inputs.write(inputs.unique_frame(pool, rows), work / f"u{rows}.csv")
    out: dict[str, Any] = {name: [] for name in trees} | {"loads": []}
    pipe = Pipeline(None, work)
    for i in range(repeat):
        out["loads"].append(load_average())
        for name, tree in trees.items():
            saved = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = str(tree / "src")
            try:
                db = work / f"job-{name}-{i}.duckdb"
                run = fast_run(pipe, csv, db)
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
            files = f"{work}/runs/{run.summary.get('run_id')}/chunk-*/*.jsonl.gz"
            base = measure.baseline(csv, files, work / f"base-{name}-{i}.duckdb", cwd=work)
            out[name].append(
                {
                    "cpu": run.proc.cpu, "wall": run.proc.wall, "rss": run.proc.peak_rss_mb,
                    "base_cpu": base["proc"].cpu, "base_wall": base["proc"].wall,
                    "stages": run.summary.get("cpu_timings") or {},
                    "status": run.summary.get("status"),
                }
            )  # fmt: skip
            print(f"[local-cost] {rows:,} {name}: {out[name][-1]}", file=sys.stderr, flush=True)
            drop_run(work, run, db, work / f"base-{name}-{i}.duckdb")
    csv.unlink()
    return out


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def render(results: dict[str, Any], command: str, started: datetime) -> str:
    lines = [
        "# Local cost against its floors (bench/local_cost_bench.py, #47)",
        "",
        f"- command: `{command}`",
        f"- date: {started.isoformat(timespec='seconds')}; {report.machine()}",
        "- each tree's placeflow imported from its checkout (PYTHONPATH), the same interpreter"
        " and packages; the trees' runs interleaved, so that they meet the same load",
        "",
        "## A 10-row run on a new warehouse",
        "",
        "`python -m placeflow.cli run ten.csv --db NEW/wh.duckdb --json` (embedded sandbox in"
        f' the process, no Prefect) against `python -c "{FLOOR}"`; CPU s (user+sys), each'
        " run of the repeat listed, median bold (each process run once before, not counted:"
        " its bytecode written).",
        "",
        "| process | CPU s | median | x floor | wall s (median) |",
        "|---|---|---:|---:|---:|",
    ]
    s = results["small"]
    floor = med(s["floor"])
    each = " / ".join(f"{v:.2f}" for v in s["floor"])
    lines.append(f"| bare import | {each} | **{floor:.2f}** | 1.00 | - |")
    for name in results["trees"]:
        v = s[name]
        lines.append(
            f"| 10-row run, {name} | {' / '.join(f'{x:.2f}' for x in v)} | **{med(v):.2f}** |"
            f" {med(v) / floor:.2f} | {med(s.get(f'{name}-wall', [])):.2f} |"
        )
    loads = ", ".join(f"{x:.1f}" for x in s["loads"])
    lines.append(f"\nLoad average (1 min) at each repeat: {loads}.")
    for key in ("job", "big"):
        if key not in results:
            continue
        j = results[key]
        lines += [
            "",
            f"## A {j['rows']:,}-row job-route run, exact dedupe, the sandbox answering at once",
            "",
            "Against a bare DuckDB process reading the same CSV and the run's result files"
            " (bench/measure.baseline), measured right after each run.",
            "",
            "| tree | CPU s | baseline CPU s | CPU x | wall s | baseline wall s | peak RSS MB |"
            " load |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name in results["trees"]:
            for r, load in zip(j[name], j["loads"], strict=False):
                lines.append(
                    f"| {name} | {r['cpu']:.1f} | {r['base_cpu']:.1f} |"
                    f" {r['cpu'] / r['base_cpu']:.2f} | {r['wall']:.1f} | {r['base_wall']:.1f} |"
                    f" {r['rss']:,.0f} | {load:.1f} |"
                )
        for name in results["trees"]:
            if len(j[name]) > 1:
                ratio = med([r["cpu"] / r["base_cpu"] for r in j[name]])
                lines.append(
                    f"| {name}, median of {len(j[name])} | {med([r['cpu'] for r in j[name]]):.1f} |"
                    f" {med([r['base_cpu'] for r in j[name]]):.1f} | **{ratio:.2f}** |"
                    f" {med([r['wall'] for r in j[name]]):.1f} |"
                    f" {med([r['base_wall'] for r in j[name]]):.1f} |"
                    f" {med([r['rss'] for r in j[name]]):,.0f} | |"
                )
        for name in results["trees"]:
            stages = j[name][-1]["stages"]
            top = sorted(((v, k) for k, v in stages.items() if k != "total"), reverse=True)[:5]
            said = ", ".join(f"{k} {v:.1f}" for v, k in top)
            total = stages.get("total", 0.0)
            lines.append(f"\n{name}, the stages' CPU s (last run): {said}; total {total:.1f}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as env_for: bytecode kept, as installed
    started = datetime.now(UTC)
    trees = {name: Path(path) for name, _, path in (t.partition("=") for t in args.tree)}
    trees["after"] = HERE
    work = Path(args.workdir or tempfile.mkdtemp(prefix="local_cost_"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"trees": list(trees), "small": small(trees, work, args.repeat)}
    print(f"[local-cost] small: {results['small']}", file=sys.stderr, flush=True)
    if args.rows:
        results["job"] = {"rows": args.rows, **job_route(trees, work, args.rows, args.job_repeat)}
    if args.big_rows:
        results["big"] = {"rows": args.big_rows, **job_route(trees, work, args.big_rows, 1)}
    given = argv if argv is not None else sys.argv[1:]
    command = shlex.join([".venv/bin/python", "bench/local_cost_bench.py", *given])
    body = render(results, command, started)
    print(body)
    if not args.no_write:
        write_section(HERE / "bench" / "RESULTS.md", body, "local-cost")


if __name__ == "__main__":
    main()
