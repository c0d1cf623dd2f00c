"""A larger run writes its plan in parts before the hold that records it (issue 47): readers
open the warehouse between the parts and do not see them; the hold records the run and its
chunks alone; a refused run and a run killed in the middle of its parts leave nothing behind
once the next run has opened. What is asserted is what a reader process, the warehouse file
and the sandbox themselves saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

import placeflow
from placeflow.errors import BudgetRefused
from placeflow.runner.prepare import SMALL_INPUT
from placeflow.state.checks import run_checks
from placeflow.state.opening import Parts
from placeflow.store import writer

from .conftest import KEY, Served, ServeSandbox, places, write_csv
from .test_claims import loopback

N = 500
"""Places in the input: more than SMALL_INPUT bytes, so its plan is written in parts."""

ROOT = Path(__file__).resolve().parents[2]

SEE = """
import duckdb, json, sys
con = duckdb.connect(sys.argv[1], read_only=True)
one = lambda sql: con.execute(sql).fetchall()[0][0]
print(json.dumps({
    "openings": one("select count(*) from run_openings"),
    "opening_rows": one("select count(*) from run_rows where run_id in (select run_id from run_openings)"),
    "runs": one("select count(*) from runs"),
    "crosswalk": one("select count(*) from crosswalk"),
    "all_rows": one("select count(*) from run_rows"),
}))
"""  # noqa: E501 - a script a reader process runs
"""A reader process: what it sees of the openings, the runs and the crosswalk."""

KILL_AFTER_ROWS = """
import os, runpy, signal, sys
from placeflow.state import opening
real = opening.Parts.write
def write(self, table, frames):
    n = real(self, table, frames)
    if table == "run_rows":
        os.kill(os.getpid(), signal.SIGKILL)  # killed with its input rows written, nothing else
    return n
opening.Parts.write = write
sys.argv = ["placeflow", *sys.argv[1:]]
runpy.run_module("placeflow.cli", run_name="__main__")
"""
"""`placeflow run ...` killed (SIGKILL) once its first part, the input rows, is written."""


def seen(db: Path) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", SEE, str(db)], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, int] = json.loads(done.stdout)
    return found


def posts(served: Served) -> int:
    """Requests the sandbox received that can spend (every POST)."""
    return sum(sum(by.values()) for route, by in served.stats()["requests"].items()
               if route.startswith("POST "))  # fmt: skip


def billed_once(served: Served, places: int) -> None:
    """The sandbox itself billed `places` rows in all, none twice."""
    account = served.sandbox.backend.keys[KEY].account
    assert account.rows_billed_twice() == []
    assert sum(account.rows_billed.values()) == places


def settled(db: Path) -> dict[str, Any]:
    """The warehouse once every run ended: no opening left, each run's rows its own count,
    and the integrity checks clean."""
    with duckdb.connect(str(db), read_only=True) as con:
        openings = con.execute("select count(*) from run_openings").fetchall()[0][0]
        orphans = con.execute(
            "select count(*) from run_rows anti join runs using (run_id)"
        ).fetchall()[0][0]
        per_run = dict(
            con.execute(
                "select runs.status, count(run_rows.row_ord) from runs"
                " left join run_rows using (run_id) group by runs.status"
            ).fetchall()
        )
        problems = {name: n for name, n in run_checks(con).items() if n}
    return {"openings": openings, "orphans": orphans, "rows": per_run, "problems": problems}


def test_readers_open_the_warehouse_between_the_parts_and_do_not_see_them(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the writer letting go after every part (its stretch made 0), a reader process opens
    the warehouse once the input rows are written: it sees the opening and its rows in run_rows,
    no runs row for it and none of them in the crosswalk. The run then completes, billed once."""
    served = serve_sandbox(fail_rate=0.0)
    db, csv = tmp_path / "wh.duckdb", write_csv(tmp_path / "a.csv", places(N))
    assert csv.stat().st_size > SMALL_INPUT
    monkeypatch.setattr(writer, "STRETCH", 0.0)
    monkeypatch.setattr(writer, "GAP", 0.0)
    looks: list[dict[str, int]] = []
    real = Parts.write

    def write(self: Parts, table: str, frames: Iterable[pl.DataFrame]) -> int:
        written = real(self, table, frames)
        if table == "run_rows" and not looks:
            looks.append(seen(db))
        return written

    monkeypatch.setattr(Parts, "write", write)
    summary = placeflow.run([str(csv)], db=db, target=loopback(served.base_url))
    assert summary.status == "completed" and summary.rows_read == N
    order = [name for name in summary.timings if name in ("plan", "budget", "open", "submit")]
    assert order == ["plan", "budget", "open", "submit"]  # the parts' time is the open's
    assert summary.timings["open"] > 0
    assert looks == [{"openings": 1, "opening_rows": N, "runs": 0, "crosswalk": 0, "all_rows": N}]
    billed_once(served, N)
    assert settled(db) == {"openings": 0, "orphans": 0, "rows": {"completed": N}, "problems": {}}


def test_a_refused_run_leaves_no_parts(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """A larger run refused by a budget in the hold that would record it: its parts were
    written, and are gone after; it is recorded refused, with no rows, and sent nothing."""
    served = serve_sandbox(fail_rate=0.0)
    db, csv = tmp_path / "wh.duckdb", write_csv(tmp_path / "a.csv", places(N))
    budget = subprocess.run(
        [sys.executable, "-m", "placeflow.cli", "budget", "set", "--per", "day", "--credits", "10",
         "--db", str(db)], capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert budget.returncode == 0, budget.stderr[-3000:]
    written: list[int] = []
    real = Parts.write

    def write(self: Parts, table: str, frames: Iterable[pl.DataFrame]) -> int:
        written.append(real(self, table, frames))
        return written[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Parts, "write", write)
        with pytest.raises(BudgetRefused, match="day budget"):
            placeflow.run([str(csv)], db=db, target=loopback(served.base_url))
    assert sum(written) >= 2 * N  # its input rows and its places were written in parts
    assert posts(served) == 0
    assert settled(db) == {"openings": 0, "orphans": 0, "rows": {"refused": 0}, "problems": {}}


def test_a_run_killed_in_its_parts_is_swept_by_the_next(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """`placeflow run` killed (SIGKILL) with its input rows written in parts: a reader sees the
    opening's rows outside the crosswalk and no run; the same command again sweeps them (their
    process is gone), records its own and completes, every place billed once."""
    served = serve_sandbox(fail_rate=0.0)
    db, csv = tmp_path / "wh.duckdb", write_csv(tmp_path / "a.csv", places(N))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLACEFLOW_", "PREFECT_"))}
    env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=served.base_url)
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_ROWS, "run", str(csv), "--db", str(db), "--quiet"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert seen(db) == {"openings": 1, "opening_rows": N, "runs": 0, "crosswalk": 0, "all_rows": N}
    assert posts(served) == 0
    summary = placeflow.run([str(csv)], db=db, target=loopback(served.base_url))
    assert summary.status == "completed" and summary.rows_read == N
    billed_once(served, N)
    assert settled(db) == {"openings": 0, "orphans": 0, "rows": {"completed": N}, "problems": {}}
