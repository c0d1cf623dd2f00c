"""Measuring one child process (wall, CPU, peak RSS via wait4) and the sandbox's own counts."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILES_ROUTE = "GET /files"


@dataclass
class Child:
    rc: int
    wall: float
    cpu: float
    peak_rss_mb: float
    stdout: str
    stderr: str
    samples: list[tuple[float, float, float]] = field(default_factory=list)
    """(seconds since start, the measured process's RSS MB, 1-minute load average), sampled
    while it ran (only when watched)."""
    stopped: str | None = None
    """Why the watcher stopped the process (RSS past the limit), or None."""


WRAPPER = """
import json, os, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
proc = subprocess.Popen(cmd)
_, status, usage = os.wait4(proc.pid, 0)
wall = time.perf_counter() - t0
with open(out, "w") as f:
    json.dump({"rc": os.waitstatus_to_exitcode(status), "wall": wall,
               "cpu": usage.ru_utime + usage.ru_stime, "maxrss_kb": usage.ru_maxrss}, f)
"""
"""Runs the measured command from a small interpreter: a child forked from this (large) bench
process would report this process's RSS at fork as its own peak (Linux carries the parent's
high-water mark over fork and exec), so the measured child is forked from the small wrapper."""


def status_mb(field: str, pid: int | str = "self") -> float:
    """A memory field of /proc/PID/status (VmRSS, VmHWM) in MB (0 when the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def _rss_mb(pid: int) -> float:
    """VmRSS of a process in MB (0 when it is gone)."""
    return status_mb("VmRSS", pid)


def _measured_pid(wrapper: int) -> int | None:
    """The wrapper's one child: the measured process."""
    try:
        with open(f"/proc/{wrapper}/task/{wrapper}/children") as f:
            pids = f.read().split()
    except OSError:
        return None
    return int(pids[0]) if pids else None


def child(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    rss_limit_mb: float | None = None,
    wall_limit_s: float | None = None,
    sample_every: float | None = None,
) -> Child:
    """Run `cmd` to the end: its wall time, and its own rusage from wait4 (CPU, peak RSS).

    With a limit or `sample_every`, its RSS and the load average are sampled while it runs
    (every `sample_every` s, 1 s by default); past `rss_limit_mb` or `wall_limit_s` it is
    killed and `stopped` says so (its rc is then -9)."""
    base = Path(cwd or ".") / f".child-{os.getpid()}-{time.monotonic_ns()}"
    paths = {k: Path(f"{base}.{k}") for k in ("out", "err", "json")}
    samples: list[tuple[float, float, float]] = []
    stopped = None
    watched = any(x is not None for x in (rss_limit_mb, wall_limit_s, sample_every))
    with paths["out"].open("w+b") as out, paths["err"].open("w+b") as err:
        wrapped = [sys.executable, "-c", WRAPPER, str(paths["json"]), *cmd]
        t0 = time.perf_counter()
        proc = subprocess.Popen(wrapped, env=env, cwd=cwd, stdout=out, stderr=err)
        while True:
            try:
                proc.wait(timeout=(sample_every or 1.0) if watched else None)
                break
            except subprocess.TimeoutExpired:
                pid = _measured_pid(proc.pid)
                if pid is None:
                    continue
                rss, at = _rss_mb(pid), time.perf_counter() - t0
                samples.append((at, rss, os.getloadavg()[0]))
                if rss_limit_mb is not None and rss > rss_limit_mb and stopped is None:
                    stopped = f"RSS {rss:,.0f} MB passed the limit of {rss_limit_mb:,.0f} MB"
                elif wall_limit_s is not None and at > wall_limit_s and stopped is None:
                    stopped = f"still running after the limit of {wall_limit_s:,.0f} s"
                else:
                    continue
                os.kill(pid, signal.SIGKILL)
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, wrapped)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    m = json.loads(paths["json"].read_text())
    for path in paths.values():
        path.unlink()
    return Child(
        m["rc"], m["wall"], m["cpu"], m["maxrss_kb"] / 1024, stdout, stderr, samples, stopped
    )


@contextmanager
def stage_cost() -> Iterator[dict[str, float]]:
    """Measure the block in this process; the dict yielded is filled when it ends: cpu_s,
    wall_s, rss_before_mb, stage_peak_mb (the RSS high-water mark, reset as the block starts)
    and ru_maxrss_mb (the process's)."""
    cost: dict[str, float] = {"rss_before_mb": round(status_mb("VmRSS"))}
    Path("/proc/self/clear_refs").write_text("5", encoding="utf-8")
    cpu, wall = own_cpu(), time.perf_counter()
    yield cost
    cost.update(
        cpu_s=round(own_cpu() - cpu, 2),
        wall_s=round(time.perf_counter() - wall, 2),
        stage_peak_mb=round(status_mb("VmHWM")),
        ru_maxrss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    )


def own_cpu() -> float:
    """CPU seconds (user + system) this process has used so far, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def delta(before: dict[str, Any], after: dict[str, Any], key: str) -> dict[str, Any]:
    """Requests by route and credits charged between two `Sandbox.stats()` snapshots."""
    routes: Counter[str] = Counter()
    for route, by_status in after["requests"].items():
        old = before["requests"].get(route, {})
        n = sum(by_status.values()) - sum(old.values())
        if n:
            routes[route] = n
    files = routes.get(FILES_ROUTE, 0)
    total = sum(routes.values())
    a, b = after["keys"][key], before["keys"][key]
    return {
        "routes": dict(routes),
        "total": total,
        "api": total - files,
        "files": files,
        "charged": a["credits"]["charged"] - b["credits"]["charged"],
        "rate_limited": a["rate_limited"] - b["rate_limited"],
        "peak_per_minute": a["peak_per_minute"],
        "peak_per_second": a["peak_per_second"],
        "double_charged": a["double_charged_refs"],
    }


@dataclass
class Run:
    """One pipeline process: its measures, its JSON summary and what the sandbox saw."""

    proc: Child
    before: dict[str, Any]
    after: dict[str, Any]
    key: str
    sandbox_cpu: float = 0.0
    """CPU seconds the benchmark process (the sandbox serving this run) spent meanwhile."""
    summary: dict[str, Any] = field(init=False)
    sandbox: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        lines = [ln for ln in self.proc.stdout.splitlines() if ln.startswith("{")]
        if self.proc.rc != 0 or not lines:
            raise RuntimeError(
                f"pipeline run failed (exit {self.proc.rc}; "
                f"{self.proc.stopped or 'not stopped by the watcher'}):\n"
                f"{self.proc.stdout[-2000:]}\n"
                f"{self.proc.stderr[-4000:]}"
            )
        self.summary = json.loads(lines[-1])
        self.sandbox = delta(self.before, self.after, self.key)


BASELINE = """
import sys, duckdb
csv, files, db = sys.argv[1:4]
con = duckdb.connect(db)
con.execute("set enable_progress_bar = false")
con.execute("create table input as select * from read_csv(?, header = true)", [csv])
con.execute(
    "create table results as select * from read_json(?, format = 'newline_delimited')", [files]
)
n_in = con.execute("select count(*) from input").fetchone()[0]
n_out = con.execute("select count(*) from results").fetchone()[0]
print(n_in, n_out)
"""


def baseline(csv: Path, files: str, db: Path, *, cwd: Path) -> dict[str, Any]:
    """A bare DuckDB process doing the unavoidable work: read the input, read the result files."""
    run = child([sys.executable, "-c", BASELINE, str(csv), files, str(db)], cwd=cwd)
    if run.rc != 0:
        raise RuntimeError(f"baseline failed:\n{run.stderr[-3000:]}")
    n_in, n_out = (int(x) for x in run.stdout.split()[-2:])
    return {"proc": run, "rows_in": n_in, "rows_out": n_out}
