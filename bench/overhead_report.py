"""The pipeline benchmark's local-overhead sections: repeated runs against repeated bare DuckDB
baselines (min and median), where the run's own time went (its summary's `timings` and
`cpu_timings`); every figure measured. The 10M-row and real-limits scenarios are
bench/scale_report.py's."""

from __future__ import annotations

from statistics import median
from typing import Any

CPU_TARGET, WALL_TARGET = 2.0, 3.0
"""Issue 18: at 1M rows, median local CPU ≤ 2x and wall ≤ 3x the bare DuckDB baseline."""


ORDER = (
    "read", "normalize", "dedupe", "fresh", "plan", "budget", "open", "send-batch", "submit",
    "poll", "fetch", "load", "account",
)  # fmt: skip
"""The stages in the data's order (the JSON summary's keys come sorted)."""


def _ok(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def loads(values: list[float]) -> str:
    """A range of 1-minute load averages, as measured before each run."""
    return (
        f"{min(values):.1f}"
        if min(values) == max(values)
        else (f"{min(values):.1f}-{max(values):.1f}")
    )


def stats(values: list[float]) -> tuple[float, float]:
    return min(values), median(values)


def ratios(row: dict[str, Any]) -> tuple[float, float]:
    """(CPU x, wall x): the pipeline's median over the baseline's median."""
    runs, bases = row["runs"], [b["proc"] for b in row["baselines"]]
    cpu = median(r.proc.cpu for r in runs) / median(b.cpu for b in bases)
    wall = median(r.proc.wall for r in runs) / median(b.wall for b in bases)
    return cpu, wall


def overhead(rows: list[dict[str, Any]]) -> list[str]:
    reps = len(rows[0]["runs"])
    out = [
        "## 3-4. Local overhead and memory at the sandbox's fastest setting",
        "",
        "Sandbox: jobs finish at submission, its rate windows scaled by 0.001, and the client "
        "given the same windows (`PLACEFLOW_RATE_LIMITS=10/0.001s,100/0.06s`): the key's limits "
        "are not local overhead. Baseline: a bare `python -c` DuckDB process reading the same "
        "CSV into a table and the run's verified result files (`runs/<run_id>/chunk-*/*.jsonl.gz`)"
        " into a table with `read_json(..., format='newline_delimited')`. *Sandbox CPU*: what the "
        "sandbox (served by the benchmark process) spent meanwhile; the pipeline waits for it "
        "on every request, so it is part of the pipeline's wall time but not of its CPU.",
        "",
        f"Each size ran {reps} time(s), each run on a new warehouse followed by its own "
        "baseline; figures are *min / median*; the ratios are median over median. *load* is "
        "the 1-minute load average before each run (the 2-core machine is shared).",
        "",
        "| rows | pipeline wall s | flow s | CPU s | peak RSS (max) | API requests | "
        "sandbox CPU s | baseline wall s | baseline CPU s | baseline RSS | wall x | CPU x | "
        "load |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        runs, bases = r["runs"], [b["proc"] for b in r["baselines"]]
        cpu_x, wall_x = ratios(r)

        def mm(values: list[float]) -> str:
            lo, mid = stats(values)
            return f"{lo:.1f} / {mid:.1f}"

        out.append(
            f"| {r['rows']:,} | {mm([x.proc.wall for x in runs])} | "
            f"{mm([x.summary['seconds'] for x in runs])} | {mm([x.proc.cpu for x in runs])} | "
            f"{max(x.proc.peak_rss_mb for x in runs):,.0f} MB | {runs[0].sandbox['api']} | "
            f"{mm([x.sandbox_cpu for x in runs])} | {mm([b.wall for b in bases])} | "
            f"{mm([b.cpu for b in bases])} | {max(b.peak_rss_mb for b in bases):,.0f} MB | "
            f"{wall_x:.2f} | {cpu_x:.2f} | {loads(r['loads'])} |"
        )
    out.append("")
    if len(rows) >= 2:
        a, b = rows[-2], rows[-1]
        ra = max(x.proc.peak_rss_mb for x in a["runs"])
        rb = max(x.proc.peak_rss_mb for x in b["runs"])
        out += [
            f"Peak RSS grows {rb / ra:.2f}x from {a['rows']:,} to {b['rows']:,} rows "
            f"({b['rows'] / a['rows']:.0f}x the rows).",
            "",
        ]
    out += stage_table(rows)
    return out


def stage_table(rows: list[dict[str, Any]]) -> list[str]:
    """Where each size's run spent its time, by the run summary's own `timings`: median wall
    and CPU seconds per stage over the repeats, and the stage's share of the flow's wall."""
    sizes = [r for r in rows if r["runs"][0].summary.get("timings")]
    if not sizes:
        return ["The runs' summaries carry no `timings`: time by stage not shown.", ""]
    names: list[str] = []
    for r in sizes:
        for run in r["runs"]:
            names += [k for k in run.summary["timings"] if k not in names and k != "total"]
    names.sort(key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    head = " | ".join(f"{r['rows']:,}: wall s / CPU s / share" for r in sizes)
    out = [
        "### Time by stage (the run summary's `timings`, median of the repeats)",
        "",
        "Wall and CPU seconds each stage took inside the pipeline process (per-chunk stages "
        "summed over their chunks; poll counts only its own time, not the fetch and load it "
        "feeds); *share* is of the flow's timed total. *other* is the process's wall beyond "
        "the timed total: interpreter start, imports, Prefect flow and task set-up.",
        "",
        f"| stage | {head} |",
        "|---|" + "---:|" * len(sizes),
    ]

    def med(r: dict[str, Any], key: str, name: str) -> float:
        return median(float(run.summary.get(key, {}).get(name, 0.0)) for run in r["runs"])

    for name in [*names, "total"]:
        cells = []
        for r in sizes:
            wall, cpu, total = (
                med(r, "timings", name),
                med(r, "cpu_timings", name),
                med(r, "timings", "total"),
            )
            cells.append(f"{wall:.2f} / {cpu:.2f} / {100 * wall / total:.0f} %")
        out.append(f"| {'**total**' if name == 'total' else name} | " + " | ".join(cells) + " |")
    other = []
    for r in sizes:
        proc = median(run.proc.wall for run in r["runs"])
        cpu = median(run.proc.cpu for run in r["runs"])
        other.append(
            f"{proc - med(r, 'timings', 'total'):.2f} / "
            f"{cpu - med(r, 'cpu_timings', 'total'):.2f} / -"
        )
    out += ["| other (process - total) | " + " | ".join(other) + " |", ""]
    big = sizes[-1]
    ranked = sorted(names, key=lambda n: -med(big, "cpu_timings", n))[:4]
    out += [
        f"Largest CPU costs at {big['rows']:,} rows: "
        + ", ".join(f"{n} {med(big, 'cpu_timings', n):.1f} CPU s" for n in ranked)
        + ".",
        "",
    ]
    return out


def target_lines(rows: list[dict[str, Any]], cores: int) -> list[str]:
    big = rows[-1]
    cpu_x, wall_x = ratios(big)
    return [
        f"- local overhead at {big['rows']:,} rows (median of {len(big['runs'])}): CPU "
        f"{cpu_x:.2f}x (target ≤ {CPU_TARGET:g}x): {_ok(cpu_x <= CPU_TARGET)}, wall "
        f"{wall_x:.2f}x (target ≤ {WALL_TARGET:g}x): {_ok(wall_x <= WALL_TARGET)} the bare DuckDB "
        f"baseline; load average {loads(big['loads'])}",
        floor_line(big, cores),
    ]


def floor_line(row: dict[str, Any], cores: int) -> str:
    """The wall time the measured CPU allows: the pipeline's CPU and the sandbox's (it answers
    every request on the same machine) shared by the machine's cores, at best."""
    pipe = median(r.proc.cpu for r in row["runs"])
    served = median(r.sandbox_cpu for r in row["runs"])
    base_wall = median(b["proc"].wall for b in row["baselines"])
    base_cpu = median(b["proc"].cpu for b in row["baselines"])
    floor = (pipe + served) / cores
    allowed = max(0.0, WALL_TARGET * base_wall * cores - served)
    return (
        f"- the wall this CPU allows on {cores} cores: (pipeline {pipe:.1f} + sandbox "
        f"{served:.1f} CPU s) / {cores} = {floor:.1f} s at best, {floor / base_wall:.2f}x the "
        f"baseline's wall: a wall of {WALL_TARGET:g}x needs the pipeline's CPU at "
        f"{allowed:.1f} s or less with this sandbox ({allowed / base_cpu:.2f}x the baseline's "
        "CPU), and less the less its work overlaps the sandbox's"
    )
