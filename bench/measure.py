"""Measuring one child process (wall, CPU, peak RSS via wait4) and the sandbox's own counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
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


def child(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> Child:
    """Run `cmd` to the end; its own rusage (and its waited-for children's) from wait4."""
    out_path = Path(cwd or ".") / f".child-{os.getpid()}-{time.monotonic_ns()}"
    with open(f"{out_path}.out", "w+b") as out, open(f"{out_path}.err", "w+b") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    for suffix in (".out", ".err"):
        Path(f"{out_path}{suffix}").unlink()
    return Child(proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                 stdout, stderr)


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
    summary: dict[str, Any] = field(init=False)
    sandbox: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        lines = [ln for ln in self.proc.stdout.splitlines() if ln.startswith("{")]
        if self.proc.rc != 0 or not lines:
            raise RuntimeError(
                f"pipeline run failed (exit {self.proc.rc}):\n{self.proc.stdout[-2000:]}\n"
                f"{self.proc.stderr[-4000:]}"
            )
        self.summary = json.loads(lines[-1])
        self.sandbox = delta(self.before, self.after, self.key)


BASELINE = """
import sys, duckdb
csv, files, db = sys.argv[1:4]
con = duckdb.connect(db)
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
    n_in, n_out = (int(x) for x in run.stdout.split())
    return {"proc": run, "rows_in": n_in, "rows_out": n_out}
