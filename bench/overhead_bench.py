"""What a `placeflow run` process costs beyond its timed stages, and what Prefect adds per chunk.

A run's summary times its stages (`timings`, `cpu_timings`); the process's wall and CPU beyond
their total (*other*) is interpreter start, imports, the Prefect flow's set-up and what happens
after the run (artifacts, the HTML report). Measured here, against a sandbox served on loopback
from this process at its fastest setting (jobs finish at submission, rate windows scaled by
0.001, as bench/pipeline_bench.py's overhead scenario) and one Prefect server started once:

1. start-up: a bare `python -c pass`, and
   `python -c "import placeflow.cli.main, placeflow.flows.run"` (what the CLI imports before a
   run starts);
2. `python -m placeflow.cli run INPUT --db DB --json --dedupe exact --route job` at --rows
   (one 10,000-row chunk): wall, CPU, the timed total, and *other* = process - timed total;
3. the same with `--chunk-rows rows/--chunks` (many chunks), and the same run without Prefect
   (`placeflow.run` in a child process): the per-chunk stages' (submit, poll, fetch, load) time
   beyond the run without Prefect, divided by the chunks, is what Prefect costs per chunk.

Each measure is the median of --repeat runs, each on a new warehouse; the 1-minute load average
is written beside them. Its section of bench/RESULTS.md lies between overhead-bench markers.

    python3 -m uv run --frozen python bench/overhead_bench.py [--rows 10000] [--chunks 100]
        [--repeat 3] [--profile OUT.prof] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # bench helpers, beside this script
import measure
from runner import FAST_LIMITS, FAST_SCALE, KEY, prefect_server, sandbox  # the shared runner

PER_CHUNK = ("submit", "poll", "fetch", "load")
START, END = "<!-- overhead-bench:start -->", "<!-- overhead-bench:end -->"
DRIVER = """
import json, sys
import placeflow
from placeflow import config
from placeflow.options import RunOptions
from placeflow.runner.target import Target
csv, db, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
st = config.load_settings()
target = Target(base_url=st.base_url, api_key=st.api_key, label="bench", limits=st.limits)
options = RunOptions(route="job", dedupe="exact", chunk_rows=chunk)
s = placeflow.run([csv], db=db, target=target, options=options)
print(json.dumps({"status": s.status, "timings": s.timings, "cpu_timings": s.cpu_timings}))
"""


def load_average() -> float:
    return os.getloadavg()[0]


def fresh(db: Path) -> Path:
    for path in (db, db.with_name(db.name + ".wal")):
        path.unlink(missing_ok=True)
    shutil.rmtree(db.parent / "runs", ignore_errors=True)
    shutil.rmtree(db.parent / "reports", ignore_errors=True)
    return db


def one(cmd: list[str], env: dict[str, str], work: Path) -> dict[str, Any]:
    """One measured child: wall, CPU, its JSON document's timings, other = process - timed."""
    load = load_average()
    c = measure.child(cmd, env=env, cwd=work)
    lines = [ln for ln in c.stdout.splitlines() if ln.startswith("{")]
    if c.rc != 0 or not lines:
        raise RuntimeError(f"run failed (exit {c.rc}):\n{c.stdout[-2000:]}\n{c.stderr[-4000:]}")
    doc = json.loads(lines[-1])
    wall, cpu = doc["timings"], doc["cpu_timings"]
    return {
        "wall": c.wall,
        "cpu": c.cpu,
        "load": load,
        "timed_wall": wall["total"],
        "timed_cpu": cpu["total"],
        "other_wall": c.wall - wall["total"],
        "other_cpu": c.cpu - cpu["total"],
        "chunk_wall": sum(wall.get(k, 0.0) for k in PER_CHUNK),
        "chunk_cpu": sum(cpu.get(k, 0.0) for k in PER_CHUNK),
        "status": doc.get("status"),
    }


def median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def repeat(n: int, label: str, make: Any) -> list[dict[str, Any]]:
    runs = []
    for i in range(n):
        runs.append(make())
        r = runs[-1]
        print(
            f"{label} #{i + 1}: wall {r['wall']:.2f} cpu {r['cpu']:.2f}"
            f" other {r.get('other_wall', 0):.2f} / {r.get('other_cpu', 0):.2f}"
            f" load {r['load']:.2f}",
            flush=True,
        )
    return runs


def startup(env: dict[str, str], work: Path) -> dict[str, float]:
    def bare(code: str) -> dict[str, Any]:
        load = load_average()
        c = measure.child([sys.executable, "-c", code], env=env, cwd=work)
        return {"wall": c.wall, "cpu": c.cpu, "load": load}

    out = {}
    codes = (("python", "pass"), ("imports", "import placeflow.cli.main, placeflow.flows.run"))
    for name, code in codes:
        runs = [bare(code) for _ in range(3)]
        out[name + "_wall"] = median(runs, "wall")
        out[name + "_cpu"] = median(runs, "cpu")
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--chunks", type=int, default=100, help="chunks of the many-chunk runs")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--chunk-repeat", type=int, default=None, help="repeats of the many-chunk runs (--repeat)"
    )
    p.add_argument("--profile", default=None, help="also cProfile one CLI run into this file")
    p.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md alone")
    p.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    p.add_argument(
        "--tree",
        default=None,
        help="run the placeflow of this source tree (its src/ and flows/; default: this one)",
    )
    args = p.parse_args(argv)
    args.argv = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--no-write"]
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="overhead-bench-"))
    root = Path(args.tree or Path(__file__).resolve().parent.parent).resolve()
    csv = inputs.write(inputs.unique_frame(inputs.load_pool(), args.rows), work / "in.csv")
    db = work / "w.duckdb"
    chunk = max(1, args.rows // args.chunks)
    results: dict[str, Any] = {"loads": [load_average()]}
    try:
        with (
            prefect_server(True) as (api, _),
            sandbox(rows_per_second=None, rate_window_scale=FAST_SCALE) as (_, url),
        ):
            env = dict(os.environ, PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=url)
            env.update(PLACEFLOW_RATE_LIMITS=FAST_LIMITS, PREFECT_API_URL=str(api))
            env["PYTHONPATH"] = os.pathsep.join(
                [str(root / "src"), str(root), *filter(None, [env.get("PYTHONPATH")])]
            )
            cli = [sys.executable, "-m", "placeflow.cli", "run", str(csv), "--db"]
            flags = ["--json", "--dedupe", "exact", "--route", "job"]
            results["startup"] = startup(env, work)
            results["one"] = repeat(
                args.repeat, "cli 1 chunk", lambda: one([*cli, str(fresh(db)), *flags], env, work)
            )
            many = [*flags, "--chunk-rows", str(chunk)]
            results["many"] = repeat(
                args.chunk_repeat or args.repeat,
                f"cli {args.chunks} chunks",
                lambda: one([*cli, str(fresh(db)), *many], env, work),
            )
            driver = work / "driver.py"
            driver.write_text(DRIVER)
            bare = [sys.executable, str(driver), str(csv)]
            results["direct"] = repeat(
                args.chunk_repeat or args.repeat,
                f"no Prefect {args.chunks} chunks",
                lambda: one([*bare, str(fresh(db)), str(chunk)], env, work),
            )
            if args.profile:
                prof = [sys.executable, "-m", "cProfile", "-o", args.profile]
                one([*prof, "-m", "placeflow.cli", "run", str(csv), "--db", str(fresh(db)), *flags],
                    env, work)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["loads"].append(load_average())
    text = render(results, args, started, time.perf_counter() - t0)
    sys.stdout.write(text)
    if not args.no_write:
        write_section(Path(args.out), text)


def render(
    results: dict[str, Any], args: argparse.Namespace, started: datetime, took: float
) -> str:
    one, many, direct, s = results["one"], results["many"], results["direct"], results["startup"]
    chunks = args.chunks
    extra_wall = (median(many, "chunk_wall") - median(direct, "chunk_wall")) / chunks
    extra_cpu = (median(many, "chunk_cpu") - median(direct, "chunk_cpu")) / chunks
    loads = [r["load"] for r in (*one, *many, *direct)]
    other = median(one, "other_wall")

    def row(label: str, runs: list[dict[str, Any]]) -> str:
        m = {k: median(runs, k) for k in runs[0] if k != "status"}
        return (
            f"| {label} | {m['wall']:.2f} | {m['cpu']:.2f} | {m['timed_wall']:.2f} | "
            f"{m['timed_cpu']:.2f} | {m['other_wall']:.2f} | {m['other_cpu']:.2f} | "
            f"{m['chunk_wall']:.2f} | {m['chunk_cpu']:.2f} | "
            f"{min(r['load'] for r in runs):.1f}-{max(r['load'] for r in runs):.1f} |"
        )

    rows = f"{args.rows:,}"
    return "\n".join(
        [
            "# placeflow process overhead",
            "",
            "- command: `python3 -m uv run --frozen python bench/overhead_bench.py"
            + "".join(f" {a}" for a in args.argv)
            + "`",
            f"- date: {started.isoformat(timespec='seconds')}; took {took / 60:.1f} min, on"
            f" {os.cpu_count()} shared cores; load average (1 min)"
            f" {min(loads):.1f}-{max(loads):.1f} over the measured runs",
            "- sandbox at its fastest (jobs finish at submission, rate windows x0.001, the client's"
            " limits alike); one Prefect server shared by the runs; each figure the median of"
            f" {args.repeat} processes ({args.chunk_repeat or args.repeat} for the many-chunk"
            " runs), each on a new warehouse",
            "- *timed*: the run summary's `timings` total; *other*: the process's wall (CPU) beyond"
            " it: interpreter start, imports, Prefect flow set-up, artifacts and the HTML report;"
            " *per-chunk stages*: submit + poll + fetch + load as timed",
            "",
            f"Start-up: `python -c pass` {s['python_wall']:.2f} s wall /"
            f" {s['python_cpu']:.2f} CPU s;"
            f" importing the CLI and the flow {s['imports_wall']:.2f} s /"
            f" {s['imports_cpu']:.2f} CPU s.",
            "",
            "| process | wall s | CPU s | timed wall s | timed CPU s | other wall s | other CPU s |"
            " per-chunk stages wall s | CPU s | load |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            row(f"CLI, {rows} rows, 1 chunk", one),
            row(f"CLI, {rows} rows, {chunks} chunks", many),
            row(f"no Prefect (`placeflow.run`), {rows} rows, {chunks} chunks", direct),
            "",
            f"Prefect's cost per chunk (per-chunk stages of the CLI's {chunks}-chunk run beyond"
            f" the run without Prefect, / {chunks}): {extra_wall * 1000:.1f} ms wall,"
            f" {extra_cpu * 1000:.1f} ms CPU.",
            "",
            "## Targets",
            "",
            f"- *other* at {rows} rows (1 chunk): {other:.2f} s wall (target <= 5 s): "
            + ("**met**" if other <= 5 else "**missed**"),
            f"- Prefect per chunk: {extra_wall * 1000:.1f} ms wall (target: a few ms, <= 5 ms): "
            + ("**met**" if extra_wall <= 0.005 else "**missed**")
            + (" (below zero: no cost this run's noise lets through)" if extra_wall < 0 else ""),
            "",
        ]
    )


def write_section(path: Path, body: str) -> None:
    """This benchmark's block of RESULTS.md replaced (appended the first time), others kept."""
    block = f"{START}\n{body.rstrip()}\n{END}\n"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if START in old and END in old:
        head, _, rest = old.partition(START)
        text = head + block + rest.partition(END)[2].removeprefix("\n")
    else:
        text = old.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
