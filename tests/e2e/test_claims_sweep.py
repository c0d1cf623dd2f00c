"""A slow sweep of overlapping commands on one warehouse and one key, over real loopback HTTP in
processes of their own (as users run them): run A, a refresh of every known place started while
A is in flight, and run B whose places overlap A's, each seed drawing the sizes, the overlap,
the routes, how long B waits for A's answers, and whether B starts before or after A's first
purchase goes out. Asserted from the sandbox's own counts: no place billed twice; every row of
every run accounted (its disposition, claimed rows naming the run that bought them); every
command ends 0; the warehouse's checks pass."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.state.checks import run_checks

from .conftest import KEY, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow

SEEDS = range(8)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.proc_run", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 4), f"{out}\n{err}"
    summary: dict[str, Any] = json.loads(out)
    if proc.returncode == 4:  # places left to another run still without an answer, said
        assert summary["status"] == "left_to_other_run" and summary["claims_left"], summary
    return summary


def first_purchase(route: str) -> str:
    return "POST /v1/jobs/validate" if route == "job" else "POST /v1/validate"


@pytest.mark.parametrize("seed", SEEDS)
def test_overlapping_commands_never_buy_a_place_twice(
    tmp_path: Path, serve_sandbox: ServeSandbox, seed: int
) -> None:
    """One seed of the sweep (see the module): no place billed twice, every row accounted."""
    rnd = random.Random(seed)
    n_a, n_b = rnd.randint(20, 60), rnd.randint(10, 40)
    overlap = rnd.randint(1, min(n_a, n_b))
    route_a, route_b = rnd.choice(("sync", "job")), rnd.choice(("sync", "job"))
    b_first = rnd.random() < 0.5  # B starts while A's first purchase is held
    wait_b = rnd.choice((0, 120))
    served = serve_sandbox(rows_per_second=rnd.choice((20.0, 80.0)), fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    a_csv = write_csv(tmp_path / "a.csv", places(n_a))
    b_csv = write_csv(tmp_path / "b.csv", places(n_b, start=n_a - overlap))
    validate = ["--option=mode=validate", "--option=attributes=[]"]

    gate = served.sandbox.hold(first_purchase(route_a))
    a = start("run", str(db), str(a_csv), f"--option=route={route_a}", *validate)
    for _ in range(600):
        if gate.arrived.wait(1.0) or a.poll() is not None:
            break
    assert gate.arrived.is_set(), a.communicate()
    refreshed = finish(start("refresh", str(db), "0", "--option=claim_wait=0", *validate))
    b_args = ["run", str(db), str(b_csv), f"--option=route={route_b}",
              f"--option=claim_wait={wait_b}", *validate]  # fmt: skip
    b = start(*b_args) if b_first else None
    gate.open()
    first = finish(a)
    second = finish(b if b is not None else start(*b_args))

    account = served.sandbox.backend.keys[KEY].account
    assert account.rows_billed_twice() == [], (seed, refreshed, first, second)
    assert sum(account.rows_billed.values()) == n_a + n_b - overlap
    assert refreshed["submitted"] == 0  # every known place was A's, in flight
    assert first["submitted"] == n_a
    assert second["submitted"] + second["claimed"] + second["skipped_fresh"] == n_b
    with duckdb.connect(str(db), read_only=True) as con:
        for summary in (first, second, refreshed):
            rows = con.execute(
                "select count(*), count(*) filter (where disposition = 'claimed'"
                " and claimed_by is null) from run_rows where run_id = ?",
                [summary["run_id"]],
            ).fetchall()[0]
            assert rows == (summary["rows_read"], 0)
        owners = con.execute(
            "select distinct claimed_by from run_rows where disposition = 'claimed'"
        ).fetchall()
        checks = run_checks(con)
    assert set(owners) <= {(first["run_id"],)}
    assert checks == dict.fromkeys(checks, 0), (seed, checks)
