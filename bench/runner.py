"""Running `placeflow run` against a sandbox served on loopback, measured: the pieces the
pipeline benchmark's scenarios share (bench/pipeline_bench.py, bench/scale_bench.py)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import measure

from placeflow.config import apply_prefect_defaults
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig

KEY = "sk_bench_paid_key_6b6b"
CHUNK_ROWS = 10_000
FAST_SCALE = 0.001
"""The sandbox's rate windows at its fastest setting: a second lasts 1 ms, a minute 60 ms."""
FAST_LIMITS = f"10/{FAST_SCALE:g}s,100/{60 * FAST_SCALE:g}s"
"""The same windows for the client: the key's limits are not local overhead."""


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

    def __init__(
        self,
        prefect_api: str | None,
        work: Path,
        rss_limit_mb: float | None = None,
        wall_limit_s: float | None = None,
    ) -> None:
        self.prefect_api = prefect_api
        self.work = work
        self.rss_limit_mb, self.wall_limit_s = rss_limit_mb, wall_limit_s
        """A run is stopped (SIGKILL) once its RSS or its wall time passes these (guards for
        the big sizes); with a limit, its RSS and the load average are sampled every second."""
        self.last: measure.Child | None = None
        """The last run's process measures (kept when the run failed)."""

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
        env.pop("PLACEFLOW_TIER", None)  # the paid tier: the key the sandbox serves
        if limits:
            env["PLACEFLOW_RATE_LIMITS"] = limits
        if self.prefect_api:
            env["PREFECT_API_URL"] = self.prefect_api
        before = sb.stats()
        served_cpu = measure.own_cpu()  # this process only serves the sandbox meanwhile
        cmd = [
            sys.executable,
            "-m",
            "placeflow.cli.main",
            "run",
            str(csv),
            "--db",
            str(db),
            "--json",
            "--dedupe",  # the unique inputs are renamed copies at one address: exact, so that
            "exact",  # each stays a place of its own (fuzzy matching: bench/matching_bench.py)
            *extra,
        ]
        child = measure.child(
            cmd,
            env=env,
            cwd=self.work,
            rss_limit_mb=self.rss_limit_mb,
            wall_limit_s=self.wall_limit_s,
        )
        self.last = child
        return measure.Run(child, before, sb.stats(), KEY, measure.own_cpu() - served_cpu)


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


def write_section(path: Path, body: str, name: str = "pipeline-bench") -> None:
    """This block of RESULTS.md (between `<!-- NAME:start -->` and `<!-- NAME:end -->`)
    replaced, other sections kept; a new block goes right after the pipeline benchmark's own
    (at the end when there is none). Without markers yet, the unmarked text before the first
    section is the pipeline benchmark's old block."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}\n"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if start in old and end in old:
        head, _, rest = old.partition(start)
        text = head + block + rest.partition(end)[2].removeprefix("\n")
    elif name != "pipeline-bench" and "<!-- pipeline-bench:end -->" in old:
        ends = list(re.finditer(r"<!-- pipeline-bench(-[a-z0-9-]+)?:end -->", old))
        cut = ends[-1].end()  # after the last of the pipeline benchmark's sections
        rest = old[cut:].lstrip("\n")
        text = old[:cut] + "\n\n" + block + ("\n" + rest if rest else "")
    elif name != "pipeline-bench":
        text = old.rstrip("\n") + ("\n\n" if old else "") + block
    else:
        first = old.find("<!-- ")
        rest = old[first:] if first >= 0 else ""
        text = block + ("\n" + rest if rest else "")
    path.write_text(text, encoding="utf-8")


def reader_opens(db: Path) -> bool | None:
    """One try of a plain read-only DuckDB connection, as any reader opens the warehouse: True
    when it opened, False when the writer kept it out, None when there is no warehouse yet."""
    try:
        with duckdb.connect(str(db), read_only=True) as con:
            con.execute("select count(*) from runs").fetchall()
        return True
    except (duckdb.IOException, duckdb.CatalogException):
        return None if not db.exists() else False
