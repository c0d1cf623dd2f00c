"""How long an analyst waits for `placeflow run`, beside `placeflow estimate` on the same file.

Issue 37's target: a 10-row `placeflow run` takes at most twice the wall time of `placeflow
estimate` on the same file, and so does the README's sample run (`placeflow run
data/samples/*.csv`, 864 restaurants). Both commands are measured side by side, as an analyst
types them: `python -m placeflow.cli`, no PLACEFLOW_API_KEY (the embedded sandbox, as the
README's command), no PREFECT_API_URL (so `run` carries the stages out without Prefect), each
run on a new warehouse and each estimate of a first run (no warehouse yet). For comparison the
same run with `--prefect` (a flow run under Prefect's temporary server, what every run paid
before) is measured too, unless `--no-prefect`.

The commands take turns (estimate, run, run --prefect; again) so that a busy spell of the
shared machine falls on all of them alike; one unmeasured turn warms the disk cache and
Prefect's home first. Each figure is the median (and range) of --repeat processes' wall time
(wait4, `bench/measure.py`); the 1-minute load average is written beside them. Its section of
bench/RESULTS.md lies between answer-bench markers.

    python3 -m uv run --frozen python bench/answer_bench.py [--repeat 3] [--no-prefect]
        [--no-write]
"""

from __future__ import annotations

import argparse
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

import measure  # bench helpers, beside this script
from runner import write_section

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(ROOT.glob("data/samples/*.csv"))
SMALL_ROWS = 10


def small_file(work: Path) -> Path:
    """The first SMALL_ROWS rows of the first sample file (a real file's header and rows)."""
    lines = SAMPLES[0].read_text(encoding="utf-8").splitlines(keepends=True)
    path = work / "ten.csv"
    path.write_text("".join(lines[: SMALL_ROWS + 1]), encoding="utf-8")
    return path


def environment(work: Path) -> dict[str, str]:
    """This process's environment without PLACEFLOW_* and PREFECT_* settings: the embedded
    sandbox, no Prefect server; Prefect's home (for --prefect) in the work folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLACEFLOW_", "PREFECT_"))}
    env["PREFECT_HOME"] = str(work / "prefect-home")
    env.pop("CI", None)
    return env


def one(cmd: list[str], env: dict[str, str], work: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    c = measure.child(cmd, env=env, cwd=work)
    if c.rc != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {c.rc}:\n{c.stdout[-2000:]}\n{c.stderr[-3000:]}"
        )
    return {"wall": c.wall, "cpu": c.cpu, "load": load}


def commands(inputs: list[Path], work: Path, prefect: bool) -> dict[str, Any]:
    """The commands of one input, by label; each call makes a new warehouse for a run."""
    cli = [sys.executable, "-m", "placeflow.cli"]
    files = [str(p) for p in inputs]
    counter = iter(range(1_000_000))

    def db() -> str:
        folder = work / f"w{next(counter)}"
        shutil.rmtree(folder, ignore_errors=True)
        return str(folder / "placeflow.duckdb")

    made: dict[str, Any] = {
        "estimate": lambda: [*cli, "estimate", *files, "--db", str(work / "none" / "w.duckdb")],
        "run": lambda: [*cli, "run", *files, "--db", db()],
    }
    if prefect:
        made["run --prefect"] = lambda: [*cli, "run", *files, "--db", db(), "--prefect"]
    return made


def measure_input(
    name: str, inputs: list[Path], work: Path, env: dict[str, str], args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    made = commands(inputs, work, prefect=not args.no_prefect)
    for label, make in made.items():  # the warm-up turn, not measured
        one(make(), env, work)
        print(f"[answer-bench] {name}: warmed {label}", file=sys.stderr, flush=True)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in made}
    for i in range(args.repeat):
        for label, make in made.items():
            runs[label].append(one(make(), env, work))
            r = runs[label][-1]
            print(
                f"[answer-bench] {name} #{i + 1} {label}: wall {r['wall']:.2f} s,"
                f" cpu {r['cpu']:.2f} s, load {r['load']:.2f}",
                file=sys.stderr,
                flush=True,
            )
    return runs


def median(runs: list[dict[str, Any]], key: str = "wall") -> float:
    return float(statistics.median(r[key] for r in runs))


def render(
    results: dict[str, dict[str, list[dict[str, Any]]]],
    args: argparse.Namespace,
    started: datetime,
    took: float,
) -> str:
    loads = [r["load"] for per in results.values() for runs in per.values() for r in runs]
    lines = [
        "# Answer time: `placeflow run` beside `placeflow estimate`",
        "",
        "- command: `python3 -m uv run --frozen python bench/answer_bench.py"
        + "".join(f" {a}" for a in args.argv)
        + "`",
        f"- date: {started.isoformat(timespec='seconds')}; took {took / 60:.1f} min on"
        f" {os.cpu_count()} shared cores; load average (1 min) {min(loads):.1f}-{max(loads):.1f}"
        " over the measured processes",
        "- each command as an analyst types it (`python -m placeflow.cli ...`), no"
        " PLACEFLOW_API_KEY (the embedded sandbox), no PREFECT_API_URL; every run on a new"
        " warehouse, every estimate of a first run; the commands take turns, after one"
        f" unmeasured turn; figures are the median (min-max) of {args.repeat} processes' wall"
        " seconds (wait4)",
        *(
            []
            if args.no_prefect
            else [
                "- *run --prefect*: the same run as a flow run under Prefect's temporary server,"
                " as every `placeflow run` was carried out before issue 37"
            ]
        ),
        "",
        "| input | command | wall s, median (min-max) | CPU s, median | x estimate | load |",
        "|---|---|---:|---:|---:|---:|",
    ]
    verdicts = []
    for name, per in results.items():
        base = median(per["estimate"])
        for label, runs in per.items():
            walls = [r["wall"] for r in runs]
            lines.append(
                f"| {name} | `{label}` | {median(runs):.2f} ({min(walls):.2f}-{max(walls):.2f})"
                f" | {median(runs, 'cpu'):.2f} | {median(runs) / base:.2f} |"
                f" {min(r['load'] for r in runs):.1f}-{max(r['load'] for r in runs):.1f} |"
            )
        ratio = median(per["run"]) / base
        verdicts.append(
            f"- {name}: `run` {median(per['run']):.2f} s is {ratio:.2f}x `estimate`"
            f" {base:.2f} s (target <= 2x): " + ("**met**" if ratio <= 2 else "**missed**")
        )
    return "\n".join([*lines, "", "## Targets", "", *verdicts, ""])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-prefect", action="store_true", help="leave out `run --prefect`")
    p.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md alone")
    p.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    args = p.parse_args(argv)
    args.argv = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--no-write"]
    started, t0 = datetime.now(UTC), time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="answer-bench-"))
    try:
        env = environment(work)
        results = {
            f"{SMALL_ROWS} rows ({SAMPLES[0].name})": measure_input(
                "small", [small_file(work)], work, env, args
            ),
            "README sample (`data/samples/*.csv`, 864 rows)": measure_input(
                "samples", SAMPLES, work, env, args
            ),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = render(results, args, started, time.perf_counter() - t0)
    sys.stdout.write(text)
    if not args.no_write:
        write_section(Path(args.out), text, name="answer-bench")


if __name__ == "__main__":
    main()
