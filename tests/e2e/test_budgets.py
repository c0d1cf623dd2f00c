"""A month's budget of 1,000 credits kept in a new warehouse, against the sandbox on loopback:
runs within it complete, a run past it is refused sending nothing, two runs at once never pass it
together, a refresh spends within what is left, and the key is never charged past it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import KEY, ServeSandbox, places, write_csv

BUDGET = 1_000
SENDING = ("POST /v1/jobs/enrich", "POST /v1/enrich-batch", "POST /v1/enrich")
"""The sandbox's routes that can spend: a refused run sends none of them."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placeflow.cli", *args],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "placeflow.cli", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def doc(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def sent(sb: Any) -> int:
    """Requests the sandbox counted that could spend (enrich, batch or job submissions)."""
    return sum(sb.requests(route) for route in SENDING)


@pytest.mark.slow
def test_a_month_budget_governs_runs_refreshes_and_two_processes(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """With 1,000 credits a month: a first run completes; `budget --json` leaves 1,000 minus
    what the sandbox charged; estimate and a run past it exit 3 and the run sends nothing; two
    runs at once never pass it; a refresh of every place spends at most what is left; the
    sandbox never charges the key past 1,000."""
    sb = serve_sandbox(rows_per_second=100.0, fail_rate=0.0)
    db = str(tmp_path / "wh.duckdb")
    done = cli("budget", "set", "--credits", str(BUDGET), "--per", "month", "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    first = write_csv(tmp_path / "first.csv", places(300))
    done = cli("run", str(first), "--db", db, "--json")
    assert done.returncode == 0 and doc(done)["status"] == "completed", done.stderr
    charged = sb.credits()["charged"]
    assert 0 < charged <= 300

    shown = doc(cli("budget", "--db", db, "--json"))
    assert shown["exit_code"] == 0 and shown["status"] == "ok"
    (month,) = shown["budgets"]
    assert month["left"] == BUDGET - charged and month["spent"] == charged
    assert set(month) == {"credits", "per", "for", "period_start", "period_end", "spent",
                          "held", "left"}  # fmt: skip
    assert set(shown["service"]) == {"quota_limit", "current_usage", "period", "reset_date"}

    big = write_csv(tmp_path / "big.csv", places(BUDGET, start=10_000))
    priced = cli("estimate", str(big), "--db", db, "--json")
    assert priced.returncode == 3, priced.stdout + priced.stderr
    assert doc(priced)["exit_code"] == 3 and doc(priced)["status"] == "refused"
    before = sent(sb)
    refused = cli("run", str(big), "--db", db, "--json")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert doc(refused)["status"] == "refused" and doc(refused)["submitted"] == 0
    assert doc(refused)["inputs"], "the refused run still says how its input was read"
    assert "month budget" in refused.stderr
    assert sent(sb) == before, "a refused run sent nothing"

    left = BUDGET - charged
    each = left // 2 + 1  # each within what is left, together past it
    halves = [
        write_csv(tmp_path / f"half{i}.csv", places(each, start=20_000 + i * 5_000))
        for i in range(2)
    ]
    procs = [start("run", str(h), "--db", db, "--json", "--route", "job") for h in halves]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 3], [0, 0]), outs
    assert sb.credits()["charged"] <= BUDGET
    if codes == [0, 3]:
        refusal = next(err for p, (_, err) in zip(procs, outs, strict=True) if p.returncode)
        assert "month budget" in refusal

    left = doc(cli("budget", "--db", db, "--json"))["budgets"][0]["left"]
    before = sb.credits()["charged"]
    done = cli("refresh", "--older-than", "0", "--db", db, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sb.credits()["charged"] - before <= left
    assert "left for a later refresh" in done.stderr
    assert sb.stats()["keys"][KEY]["credits"]["charged"] <= BUDGET
    final = doc(cli("budget", "--db", db, "--json"))["budgets"][0]
    assert final["spent"] == sb.credits()["charged"] and final["left"] >= 0


@pytest.mark.slow
def test_a_run_in_flight_holds_its_estimate_against_a_second_run(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Run A (60 places) cannot end while the sandbox's clock stands still; run B (60 other
    places) under a budget of 100 is refused while A holds its 60, naming the budget and
    sending nothing; `budget --json` shows A's 60 held meanwhile."""
    import placeflow
    from placeflow.emulator import ManualClock
    from placeflow.options import RunOptions

    from .test_claims import Running, loopback

    clock = ManualClock()
    sb = serve_sandbox(clock=clock, rows_per_second=1000.0, fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    assert cli("budget", "set", "--credits", "100", "--per", "day", "--db", str(db)).returncode == 0
    a_csv = write_csv(tmp_path / "a.csv", places(60))
    b_csv = write_csv(tmp_path / "b.csv", places(60, start=1_000))
    a = Running(lambda ev: placeflow.run([str(a_csv)], db=db, target=loopback(sb.base_url),
                                         options=RunOptions(route="job"), on_event=ev))  # fmt: skip
    assert a.polled.wait(120), a.error
    shown = doc(cli("budget", "--db", str(db), "--json"))["budgets"][0]
    assert (shown["held"], shown["left"]) == (60, 40)  # A's estimate, held while it runs
    before = sent(sb)
    b = cli("run", str(b_csv), "--db", str(db), "--json", "--route", "job")
    assert b.returncode == 3, b.stdout + b.stderr
    assert "day budget (100 credits) has 40 left" in b.stderr
    assert sent(sb) == before
    clock.advance(3600)
    first = a.done()
    assert first.status == "completed" and sb.credits()["charged"] == first.charged <= 60


@pytest.mark.slow
def test_a_resume_is_held_to_what_its_run_may_still_spend(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """A run stopped when credits ran out after its first batch: its resume, under a budget
    that leaves less than the rest of its estimate, is refused (BudgetRefused, exit 3's class)
    sending nothing and leaves the run interrupted; with room it finishes."""
    import duckdb

    import placeflow
    from placeflow.errors import BudgetRefused, CreditsRanOut
    from placeflow.events import ChunkSubmitted, Event
    from placeflow.options import RunOptions

    from .test_claims import loopback

    sb = serve_sandbox(fail_rate=0.0)
    target, db = loopback(sb.base_url), tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "p.csv", places(30))

    def drain(event: Event) -> None:  # credits run out once the first batch is answered
        if isinstance(event, ChunkSubmitted):
            sb.sandbox.backend.set_available(KEY, 0)

    with pytest.raises(CreditsRanOut) as stopped:
        placeflow.run([str(csv)], db=db, target=target, on_event=drain,
                      options=RunOptions(route="sync"))  # fmt: skip
    run_id, first = stopped.value.run_id, sb.credits()["charged"]
    assert 0 < first <= 10
    sb.sandbox.backend.set_available(KEY, 1_000_000)
    budget = ["budget", "set", "--per", "day", "--db", str(db), "--credits"]
    assert cli(*budget, str(first + 5)).returncode == 0  # 5 left; the rest costs up to 20
    before = sent(sb)
    with pytest.raises(BudgetRefused, match="day budget"):
        placeflow.resume(run_id, db=db, target=target)
    assert sent(sb) == before
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from runs").fetchall() == [("interrupted",)]
    assert cli(*budget, "100").returncode == 0
    done = placeflow.resume(run_id, db=db, target=target)
    assert done.status == "completed" and sb.credits()["charged"] == done.charged <= 30


@pytest.mark.parametrize("reading", ["last reset", "next reset"])
def test_a_month_budget_is_the_services_month_under_either_reading_of_reset_date(
    tmp_path: Path, serve_sandbox: ServeSandbox, reading: str
) -> None:
    """The spec shows `reset_date` as a date without saying whether it is the key's last reset
    or its next: a month's budget runs from the one to the other under both readings, as the
    sandbox shows the date (`usage_reset_date`)."""
    from datetime import UTC, datetime, timedelta

    from placeflow.state.budgets import period_of

    today = datetime.now(UTC).date()
    last = today - timedelta(days=10)
    start, end = period_of("month", datetime.now(UTC), last)  # [last reset, next reset)
    assert start.date() == last and end.date() > today
    shown = last if reading == "last reset" else end.date()
    sb = serve_sandbox(usage_reset_date=shown.isoformat())
    db = str(tmp_path / "wh.duckdb")
    assert cli("budget", "set", "--credits", "100", "--per", "month", "--db", db).returncode == 0
    found = doc(cli("budget", "--db", db, "--json"))
    assert found["service"]["reset_date"] == shown.isoformat()  # what the sandbox showed
    (month,) = found["budgets"]
    assert month["period_start"][:10] == last.isoformat()
    assert month["period_end"][:10] == end.date().isoformat()
    assert sb.requests("GET /v1/usage") >= 1


@pytest.mark.slow
def test_a_refresh_that_loses_the_budget_to_a_run_started_meanwhile_chooses_again(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """A refresh chose its stale places within what a day's budget left (60 credits); before
    its check a run took 30 of them (its job runs for a minute on the sandbox): the refresh is
    not refused but chooses again within the 30 left, and the sandbox never charges the key
    past the budget."""
    from collections.abc import Callable
    from typing import TypeVar

    import placeflow
    from placeflow.options import RunOptions
    from placeflow.runner.refresh import NothingStale, refresh

    from .test_claims import Running, loopback

    R = TypeVar("R")
    sb = serve_sandbox(rows_per_second=0.5, fail_rate=0.0)
    target, db = loopback(sb.base_url), tmp_path / "wh.duckdb"
    loaded = placeflow.run([str(write_csv(tmp_path / "a.csv", places(40)))], db=db,
                           target=target, options=RunOptions(route="sync"))  # fmt: skip
    assert loaded.status == "completed"
    first = sb.credits()["charged"]
    budget = ["budget", "set", "--per", "day", "--db", str(db), "--credits", str(first + 60)]
    assert cli(*budget).returncode == 0
    b_csv = write_csv(tmp_path / "b.csv", places(30, start=1_000))
    other: list[Running] = []

    def step(name: str, fn: Callable[..., R]) -> Callable[..., R]:
        if name == "dedupe" and not other:  # the refresh chose (the warehouse let go): a run
            # takes 30 of what the budget left before the refresh's check
            other.append(Running(lambda ev: placeflow.run(
                [str(b_csv)], db=db, target=target, options=RunOptions(route="job"),
                on_event=ev)))  # fmt: skip
            assert other[0].polled.wait(120), other[0].error
        return fn

    done = refresh(db=db, older_than="0", target=target, step=step,
                   options=RunOptions(route="sync"))  # fmt: skip
    assert not isinstance(done, NothingStale) and done.status == "completed", done
    assert done.submitted == 30 and done.charged <= 30
    assert "chosen again" in (done.message or "")
    assert other[0].done().status == "completed"
    assert sb.credits()["charged"] <= first + 60  # what the sandbox billed: never past the budget
