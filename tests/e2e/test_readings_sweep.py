"""Every reading at once, drawn at random: the money invariants under combinations no single
test names (`pytest -m slow`).

Each seed draws a route, a mode, an input size, and a random subset of the sandbox's fault
knobs and spec readings (docs/spec-readings.md) at random strengths, then runs the same
command up to four times on virtual time, as a user would until it reports nothing left to
do. Whatever the combination, the sandbox bills no row twice, every run accounts for every
input row, the warehouse checks are clean, and the ledger (charges and adjustments) never
claims more than the sandbox billed, nor less once the last run did not stop interrupted
(then a held chunk's rows may be billed and not yet loaded). The sweep found a failed-part-way
job's billed rows sent again (fetch) and a late-published file's rows sent again (poller).
A scheduled refresh (`placeflow.runner.refresh` of the stale places, within a budget half the time)
under the drawn knobs bills no place twice within its own runs. `placeflow research` gets the
same: its request faults and readings, the same command up to
four times, no place or field billed twice, the checks clean (it found the checks taking a
research run's places for chunks without jobs, and a lost answer raising while the usage
could not be read).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import FaultConfig
from placeflow.emulator.research import research_stats
from placeflow.errors import PlaceflowError, RunStopped, exit_code
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.reporting.summary import exit_code_for
from placeflow.runner.refresh import refresh
from placeflow.runner.research import ResearchOptions, read_options, research
from placeflow.state.checks import run_checks

from .virtual_rig import KEY, Rig, rig, write_places

__all__ = ["rig"]  # the fixture

RATES = {  # knob: the highest rate drawn
    "error_500_rate": 0.2, "error_503_rate": 0.2, "maintenance_rate": 0.1,
    "extra_429_rate": 0.2, "drop_request_rate": 0.1, "drop_response_rate": 0.15,
    "truncate_download_rate": 0.5, "corrupt_download_rate": 0.5, "expire_url_rate": 0.5,
    "job_fail_rate": 0.3, "job_fail_midway_rate": 0.3, "job_stall_rate": 0.2,
    "null_status_rate": 0.4, "counted_late_rate": 0.3, "sync_reset_after_rate": 0.2,
    "html_503_rate": 0.1, "slow_rate": 0.2,
}  # fmt: skip
CHOICES: dict[str, list[Any]] = {  # knob: the values drawn
    "clock_skew_seconds": [-900.0, 900.0, 30.0],
    "eta_factor": [0.2, 0.5, 3.0],
    "finalizing_seconds": [1.0, 30.0],
    "bill_null_status": [False],
    "unknown_fields": [True],
    "unseen_job_reads": [1, 2, 5],
    "social_value_shape": ["url", "handle"],
    "results_late_reads": [1, 3, 5, 8],
    "job_retention_seconds": [5.0, 60.0],
    "result_parts": [2, 3, 7],
}
SEEDS = 24
RUNS = 4


def draw(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random combination: fault knobs (FaultConfig) and sandbox settings."""
    faults: dict[str, Any] = {
        name: round(rng.uniform(0, top), 3) for name, top in RATES.items() if rng.random() < 0.35
    }
    faults |= {name: rng.choice(values) for name, values in CHOICES.items() if rng.random() < 0.3}
    settings: dict[str, Any] = {"rows_per_second": rng.choice([20.0, 200.0])}
    if rng.random() < 0.4:
        settings["url_ttl_seconds"] = 2.0
    return faults, settings


def budget_of(seed: int, places: int) -> int | None:
    """A --max-credits for the seed's runs (its own draw: the others stay as they were)."""
    return random.Random(f"budget-{seed}").choice([None, None, places, places // 2, 3 * places])


def runs(
    r: Rig, rng: random.Random, csv: Path, db: Path, budget: int | None = None
) -> list[RunSummary]:
    """The same command until it leaves nothing to do (at most RUNS times), time passing; no
    invocation makes the sandbox charge more than `budget`."""
    options = RunOptions(
        route=rng.choice(["job", "job", "sync", "auto"]),
        mode=rng.choice(["validate", "enrich"]),
        chunk_rows=25,
        stuck_after=120.0,
        max_credits=budget,
    )
    done: list[RunSummary] = []
    for _ in range(RUNS):
        charged = r.billed_credits()
        try:
            summary = placeflow.run([str(csv)], options=options, db=db, target=r.target,
                                    clock=r.now)  # fmt: skip
        except PlaceflowError as exc:  # refused or out of credits: its summary, if any
            summary = getattr(exc, "summary", None)
            if summary is None:
                raise
        assert budget is None or r.billed_credits() - charged <= budget
        done.append(summary)
        if summary.status == "refused" or (
            summary.status == "completed" and not summary.not_answered and not summary.failed
        ):
            break
        r.clock.advance(rng.choice([1.0, 120.0]))
    return done


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SEEDS))
def test_no_combination_of_readings_bills_a_row_twice(rig: Any, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    faults, settings = draw(rng)
    r = rig(FaultConfig(seed=seed, **faults), **settings)
    rows = rng.choice([30, 75, 120])
    csv, db = write_places(tmp_path / "p.csv", rows), tmp_path / "wh.duckdb"
    done = runs(r, rng, csv, db, budget_of(seed, rows))
    assert r.rows_billed_twice() == 0, (faults, settings)
    with duckdb.connect(str(db), read_only=True) as con:
        assert {name: n for name, n in run_checks(con).items() if n} == {}
        per_run = con.execute("select count(*) from run_rows group by run_id").fetchall()
        ledger = dict(con.execute(
            "select kind, sum(credits) from credit_ledger group by kind"
        ).fetchall())  # fmt: skip
    refused = all(s.status == "refused" for s in done)  # its plan is not kept
    assert {n for (n,) in per_run} == (set() if refused else {rows})
    paid = int(ledger.get("charge") or 0) + int(ledger.get("adjustment") or 0)
    assert paid <= r.billed_credits(), (faults, settings)
    if done[-1].status != "interrupted":
        extra = sum(s.possible_extra_credits for s in done)
        assert r.billed_credits() <= paid + extra, (faults, settings)


RESEARCH_RATES = {  # the request faults and readings research meets (it has no jobs)
    name: RATES[name]
    for name in ("error_500_rate", "error_503_rate", "maintenance_rate", "extra_429_rate",
                 "drop_request_rate", "drop_response_rate", "html_503_rate", "slow_rate",
                 "counted_late_rate")
}  # fmt: skip
FIELDS = ("cuisine:enum:italian|thai|mexican|other", "has_outdoor_seating:bool", "owner_person")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SEEDS))
def test_no_combination_of_readings_bills_a_research_field_twice(
    rig: Any, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    faults: dict[str, Any] = {
        name: round(rng.uniform(0, top), 3)
        for name, top in RESEARCH_RATES.items()
        if rng.random() < 0.35
    }
    if rng.random() < 0.2:
        faults["research_unavailable"] = True
    faults |= {n: rng.choice(CHOICES[n]) for n in ("unknown_fields", "clock_skew_seconds")
               if rng.random() < 0.3}  # fmt: skip
    r = rig(FaultConfig(seed=seed, **faults), fail_rate=rng.choice([0.0, 0.05]))
    csv, db = write_places(tmp_path / "p.csv", rng.choice([7, 23, 41])), tmp_path / "wh.duckdb"
    spec = ResearchSpec(build_specs(FIELDS), verify_identity=rng.random() < 0.5)
    budget = budget_of(seed, 40)  # 40 credits: about ten places' research
    options = ResearchOptions(spec=spec, run=read_options(max_credits=budget))
    for _ in range(RUNS):
        charged = r.billed_credits()
        try:
            out = research([str(csv)], options, target=r.target, db=db, sleep=r.clock.sleep,
                           clock=r.now)  # fmt: skip
            code = exit_code_for(out.status)
        except RunStopped as exc:  # refused, or the budget or credits ran out: exit 3
            code = exit_code(exc) or 1
        except PlaceflowError:  # the usage unreadable before anything is sent
            code = 1
        assert budget is None or r.billed_credits() - charged <= budget, faults
        if code in (0, 3):  # done, or the budget refuses the rest
            break
        r.clock.advance(120.0)
    stats = research_stats(r.sandbox.backend)
    assert stats["billed_twice"] == [] and stats["identity_billed_twice"] == [], faults
    with duckdb.connect(str(db), read_only=True) as con:
        assert {name: n for name, n in run_checks(con).items() if n} == {}


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SEEDS // 2))
def test_no_combination_of_readings_bills_a_refreshed_place_twice(
    rig: Any, tmp_path: Path, seed: int
) -> None:
    """Places loaded by a clean run, then refreshed 40 days later under the drawn knobs: each
    place billed at most once more, whatever the refresh's runs met."""
    rng = random.Random(1_000 + seed)
    faults, _ = draw(rng)
    r = rig(rows_per_second=200.0, fail_rate=0.0)
    csv, db = write_places(tmp_path / "p.csv", rng.choice([30, 75])), tmp_path / "wh.duckdb"
    first = placeflow.run([str(csv)], options=RunOptions(route="job", chunk_rows=25), db=db,
                          target=r.target, clock=r.now)  # fmt: skip
    assert first.status == "completed" and not first.not_answered
    before = dict(r.sandbox.backend.keys[KEY].account.rows_billed)
    r.sandbox.backend.set_faults(FaultConfig(seed=seed, **faults))
    r.clock.advance(40 * 86_400.0)
    budget = rng.choice([None, first.submitted // 2])
    options = RunOptions(chunk_rows=25, stuck_after=120.0)
    for _ in range(RUNS):
        try:
            done = refresh(db=db, older_than="30d", target=r.target, max_credits=budget,
                           options=options, clock=r.now)  # fmt: skip
        except PlaceflowError as exc:
            done = getattr(exc, "summary", None)
            if done is None:
                raise
        if done.status == "completed" and not done.not_answered and not done.failed:
            break
        r.clock.advance(rng.choice([1.0, 120.0]))
    after = r.sandbox.backend.keys[KEY].account.rows_billed
    again = {row: n - before.get(row, 0) for row, n in after.items() if n - before.get(row, 0) > 1}
    assert again == {}, faults
    with duckdb.connect(str(db), read_only=True) as con:
        assert {name: n for name, n in run_checks(con).items() if n} == {}
