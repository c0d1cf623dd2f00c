"""Rendering bench/scale_bench.py's measurements as their own sections of bench/RESULTS.md
(figures only, measured by the run that writes them)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from statistics import median
from typing import Any

import measure
from overhead_report import ORDER
from scale_bench import accounted_ok

RSS_LIMIT_MB, RSS_GROWTH = 2048, 1.3
"""Issue 18: peak RSS at 10M rows under 2 GB and under 1.3x that at 1M rows."""
BOUND_TARGET = 1.1
"""Issue 18: at the real limits, wall within 1.1x of the least time any client needs."""


def _ok(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _t(seconds: float) -> str:
    return f"{seconds:,.1f} s" + (f" ({seconds / 60:,.1f} min)" if seconds >= 120 else "")


def _load(proc: measure.Child | None) -> str:
    """The 1-minute load average sampled each second while the process ran: min / median / max."""
    if proc is None or not proc.samples:
        return "not sampled"
    values = [s[2] for s in proc.samples]
    return f"{min(values):.1f} / {median(values):.1f} / {max(values):.1f}"


def _rss_curve(proc: measure.Child) -> str:
    """The sampled RSS at each tenth of the run, to show where memory grows."""
    if not proc.samples:
        return "not sampled"
    end = proc.samples[-1][0]
    points = []
    for tenth in range(1, 11):
        at = end * tenth / 10
        rss = max((s[1] for s in proc.samples if s[0] <= at), default=0.0)
        points.append(f"{rss:,.0f}")
    return " → ".join(points) + " MB"


def _stages(summary: dict[str, Any]) -> str:
    t, c = summary.get("timings") or {}, summary.get("cpu_timings") or {}
    if not t:
        return "the run's summary carries no `timings`"
    order = sorted(t, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    return ", ".join(f"{k} {t[k]:.1f} / {c.get(k, 0.0):.1f}" for k in order)


def code_measured() -> str:
    """Which placeflow the runs ran: its tree's commit, and whether its code had uncommitted
    changes (a tree without git, such as an exported snapshot, names its commit in COMMIT)."""
    import placeflow

    root = Path(placeflow.__file__).resolve().parents[2]
    if (root / "COMMIT").exists():
        return f"{root}, an export of commit {(root / 'COMMIT').read_text().strip()}"
    try:
        git = ["git", "-C", str(root)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "src", "flows", "sql"], capture_output=True
        )
    except OSError:
        return str(root)
    changed = " with uncommitted changes in src/, flows/ or sql/" if dirty.stdout.strip() else ""
    return f"{root}, commit {head.stdout.decode().strip()}{changed}"


def header(title: str, command: str, started: Any, machine: str, pool: str) -> list[str]:
    return [
        f"# {title}",
        "",
        f"- command: `{command}`",
        f"- date: {started.isoformat(timespec='seconds')}; machine: {machine}",
        f"- placeflow measured: {code_measured()}",
        f'- inputs: {pool}; unique inputs cycle the pool with copies renamed ("<name> 2", ...),'
        " written a batch of 500,000 rows at a time",
        "- pipeline: `python -m placeflow.cli run INPUT --db DB --json --dedupe exact --route "
        "job`, a subprocess whose wall, CPU (user+sys) and peak RSS (wait4 `ru_maxrss`) are its "
        "own; its RSS and the machine's 1-minute load average sampled every second while it ran",
        "",
    ]


def _accounting(rows: int, a: dict[str, Any], charged: int) -> list[str]:
    checks = accounted_ok(rows, a, charged)
    return [
        "Every input row, by the warehouse's own tables (bench/sql/rows_accounted.sql over "
        "run_rows, rejects, run_places, validations/enrichments) and the sandbox's own charge:",
        "",
        "| input rows | run_rows | rejected | duplicates | skipped fresh | held | sent "
        "(places) | planned | outcomes | succeeded | failed | sent, no outcome | charged "
        "(sandbox) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {rows:,} | {a['run_rows']:,} | {a['rejected']:,} | {a['duplicates']:,} | "
        f"{a['skipped_fresh']:,} | {a['held_failing']:,} | {a['submitted']:,} | "
        f"{a['places_planned']:,} | {a['outcomes']:,} | {a['succeeded']:,} | {a['failed']:,} | "
        f"{a['submitted_without_outcome']:,} | {charged:,} |",
        "",
        "Checks: " + "; ".join(f"{k}: {_ok(v)}" for k, v in checks.items()) + ".",
        "",
    ]


def big_section(big: dict[str, Any], head: list[str]) -> str:
    """The 10M-row scenario: wall, CPU, peak RSS, rows accounted, credits per unique place."""
    n = big["rows"]
    out = [
        *head,
        f"Sandbox at its fastest setting (jobs finish at submission; rate windows scaled by "
        f"0.001, the client's alike), as the overhead section. The input: {n:,} rows, "
        f"{big['input_mb']:,.0f} MB of CSV, written in {big['write_seconds']:.0f} s. Load "
        f"average before the run {big['load']:.1f}, after it {big.get('load_after', 0):.1f}.",
        "",
    ]
    if "error" in big:
        return "\n".join([*out, *_failed(n, big)])
    run, ref = big["run"], big.get("ref")
    s, sb = run.summary, run.sandbox
    a = big["accounted"]
    rows = [("reference", big["ref_rows"], ref)] if ref is not None else []
    rows.append(("scale", n, run))
    again = big.get("rerun") or {}
    if "run" in again:
        rows.append(("rerun, same file and warehouse", n, again["run"]))
    out += [
        "| run | rows | wall | flow s | CPU s | peak RSS | load during (min / median / max) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, k, r in rows:
        out.append(
            f"| {label} | {k:,} | {_t(r.proc.wall)} | {r.summary['seconds']:,.1f} | "
            f"{r.proc.cpu:,.1f} | {r.proc.peak_rss_mb:,.0f} MB | {_load(r.proc)} |"
        )
    out += [
        "",
        f"RSS of the {n:,}-row run at each tenth of its wall time: {_rss_curve(run.proc)}. "
        f"The benchmark process (the sandbox, which keeps every result file) peaked at "
        f"{big['bench_rss_mb']:,.0f} MB; it spent {run.sandbox_cpu:,.1f} CPU s serving the run.",
        "",
        f"Time by stage at {n:,} rows (wall s / CPU s): {_stages(s)}.",
        "",
        *_accounting(n, a, sb["charged"]),
        *_rerun(n, big.get("rerun")),
    ]
    places, ok = a["submitted_keys"], a["succeeded"]
    per_place = sb["charged"] / places if places else float("nan")
    per_ok = sb["charged"] / ok if ok else float("nan")
    rss = run.proc.peak_rss_mb
    growth = rss / ref.proc.peak_rss_mb if ref is not None else None
    out += [
        "Targets:",
        "",
        f"- completed against the sandbox: {_ok(True)}; every row accounted: "
        f"{_ok(all(accounted_ok(n, a, sb['charged']).values()))}",
        f"- credits per unique place: {per_place:.4f} charged by the sandbox per place sent "
        f"({places:,}); per succeeded place {per_ok:.4f} (target 1.00): "
        f"{_ok(sb['charged'] == ok)}; the sandbox fails about 1% of places and charges them "
        f"nothing ({a['failed']:,} failed); double-charged refs: {len(sb['double_charged'])}",
        f"- peak RSS {rss:,.0f} MB (target < {RSS_LIMIT_MB:,} MB): {_ok(rss < RSS_LIMIT_MB)}"
        + (
            f"; {growth:.2f}x the {big['ref_rows']:,}-row run's {ref.proc.peak_rss_mb:,.0f} MB "
            f"(target < {RSS_GROWTH}x): {_ok(growth < RSS_GROWTH)}"
            if ref is not None and growth is not None
            else "; no reference run"
        ),
        "",
    ]
    return "\n".join(out)


def _rerun(n: int, again: dict[str, Any] | None) -> list[str]:
    """The same command again on the run's warehouse: what it bought, by the sandbox."""
    if again is None:
        return []
    if "run" not in again:
        return ["**The rerun did not complete**: " + str(again.get("error")) + ".", ""]
    run, a = again["run"], again["accounted"]
    sb = run.sandbox
    twice = int(again["rows_billed_twice"])
    checks = accounted_ok(n, a, sb["charged"])
    return [
        f"Rerun of the same file on that warehouse (a user running the command again): "
        f"{a['skipped_fresh']:,} places skipped as fresh, {a['submitted']:,} sent again (the "
        f"places that failed the first time: failures are never fresh), {sb['charged']:,} "
        f"credits charged, {sb['api']:,} API requests ({_routes(sb)}); wall {_t(run.proc.wall)}, "
        f"CPU {run.proc.cpu:,.1f} s, peak RSS {run.proc.peak_rss_mb:,.0f} MB. Time by stage "
        f"(wall s / CPU s): {_stages(run.summary)}. Every row accounted: "
        f"{_ok(all(checks.values()))}; rows the sandbox billed twice over both runs: "
        f"{twice:,} ({_ok(twice == 0)}).",
        "",
    ]


def _routes(seen: dict[str, Any]) -> str:
    return ", ".join(f"`{route}` {k:,}" for route, k in sorted(seen["routes"].items()))


def _failed(n: int, scenario: dict[str, Any]) -> list[str]:
    """A run that did not complete: why, and what its process measured."""
    proc = scenario.get("proc")
    out = [f"**The {n:,}-row run did not complete**: {scenario['error']}.", ""]
    if proc is not None:
        out += [
            f"It ran {_t(proc.wall)} (CPU {proc.cpu:,.1f} s, peak RSS {proc.peak_rss_mb:,.0f} "
            f"MB; load during it {_load(proc)}; RSS by tenths of the run: "
            f"{_rss_curve(proc)}).",
            "",
        ]
    seen = scenario.get("sandbox")
    if seen is not None:
        jobs = seen["routes"].get("POST /v1/jobs/enrich", 0) + seen["routes"].get(
            "POST /v1/jobs/validate", 0
        )
        out += [
            f"The sandbox had answered {seen['api']:,} API requests of the run ({jobs:,} job "
            f"submissions), charged {seen['charged']:,} credits"
            + (": the run was still preparing its input, nothing sent." if not jobs else "."),
            "",
        ]
    return out


def limits_section(lim: dict[str, Any], head: list[str], rate: float, slots: int) -> str:
    """The real-limits scenario: the run's wall time against the least any client needs."""
    if "error" in lim:
        return "\n".join([*head, *_failed(lim["rows"], lim)])
    run, b, n = lim["run"], lim["bounds"], lim["rows"]
    s, sb = run.summary, run.sandbox
    keyed = sb["api"] - sb["routes"].get("GET /v1/pricing", 0)
    wall, flow = run.proc.wall, s["seconds"]
    bound = b["bound"]
    out = [
        *head,
        f"Sandbox at the real service's limits: the paid key's 10 requests a second and 100 a "
        f"minute (windows unscaled), {rate:,.0f} rows a second per running job and {slots} jobs "
        "running at once (the realistic rate of the benchmark's section 1-2); the client with "
        "its own paid-tier limits (`PLACEFLOW_RATE_LIMITS` unset). Load average before the run "
        f"{lim['load']:.1f}, after it {lim['load_after']:.1f}, during it (min / median / max) "
        f"{_load(run.proc)}.",
        "",
        f"Least time any client needs for {s['submitted']:,} places in {b['jobs']:,} jobs, "
        "from its first request: *request* = its keyed requests at the key's limits (a submit "
        f"and a poll per job and the usage before and after: {b['keyed_requests']:,}; result "
        "files come from presigned URLs without the key and GET /v1/pricing needs none, so "
        "neither counts against the key: spec, Authentication); *processing* = the jobs back "
        f"to back on {slots} running slots; *schedule* = both at once (job i submitted no "
        "earlier than the key's (i+2)-th request); the bound is the largest. Were downloads "
        f"counted too, the request bound would be {_t(b['request_with_files'])}.",
        "",
        "| measure | time | x bound |",
        "|---|---:|---:|",
        f"| request bound ({b['keyed_requests']:,} keyed requests) | {_t(b['request'])} | "
        f"{b['request'] / bound:.2f} |",
        f"| processing bound | {_t(b['processing'])} | {b['processing'] / bound:.2f} |",
        f"| schedule bound | {_t(b['schedule'])} | {b['schedule'] / bound:.2f} |",
        f"| **pipeline process, wall** | {_t(wall)} | **{wall / bound:.2f}** |",
        f"| pipeline flow's own time (`seconds`) | {_t(flow)} | {flow / bound:.2f} |",
        f"| start-up, prepare before the flow's clock, Prefect (wall - flow) | {_t(wall - flow)}"
        " | - |",
        "",
        f"CPU of the pipeline process {run.proc.cpu:,.1f} s, peak RSS "
        f"{run.proc.peak_rss_mb:,.0f} MB. Time by stage (wall s / CPU s): {_stages(s)}.",
        "",
        "Requests the sandbox counted: "
        + _routes(sb)
        + f"; keyed {keyed:,} against the least {b['keyed_requests']:,} "
        f"({keyed / b['keyed_requests']:.2f}x); 429s {sb['rate_limited']}; peak per minute "
        f"{sb['peak_per_minute']}, per second {sb['peak_per_second']}.",
        "",
        *_accounting(n, lim["accounted"], sb["charged"]),
        "Target:",
        "",
        f"- wall within {BOUND_TARGET}x of the bound ({_t(bound)}): process wall "
        f"{wall / bound:.2f}x {_ok(wall / bound <= BOUND_TARGET)}; flow {flow / bound:.2f}x "
        f"{_ok(flow / bound <= BOUND_TARGET)}",
        "",
    ]
    return "\n".join(out)
