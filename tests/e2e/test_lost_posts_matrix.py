"""Issue 34 item 1, the slow matrix (`pytest -m slow`): a service that keeps Idempotency-Keys
only briefly (0.3 s to 5 s), connections reset before and after processing, 5xx bursts; the
user's --idempotency-window below the service's retention, as docs/spec-readings.md (point 6)
asks. Each seed runs the same command until nothing is left to do (at most RUNS times, time
passing), then once more after every lost job has surely ended. Whatever was lost, the
sandbox bills no row twice, and the ledger (charges and adjustments) equals what it billed."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import FaultConfig
from placeflow.errors import PlaceflowError
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.state.checks import run_checks

from .virtual_rig import Rig, rig, write_places

__all__ = ["rig"]  # the fixture

SEEDS = 16
RUNS = 4


def draw(seed: int) -> tuple[FaultConfig, dict[str, Any], float, RunOptions, int]:
    """The seed's faults, sandbox settings, retention, options and input size."""
    rng = random.Random(f"lost-posts-{seed}")
    retention = rng.choice([0.3, 1.0, 2.0, 5.0])
    faults = FaultConfig(
        seed=seed,
        idempotency_retention_seconds=retention,
        drop_response_rate=round(rng.uniform(0.1, 0.4), 3),
        drop_request_rate=rng.choice([0.0, 0.05]),
        error_503_rate=rng.choice([0.0, 0.1]),
        unknown_fields=rng.random() < 0.3,
    )
    settings = {"rows_per_second": rng.choice([20.0, 200.0]), "fail_rate": rng.choice([0, 0.02])}
    options = RunOptions(
        route="job",
        mode=rng.choice(["validate", "enrich"]),
        chunk_rows=20,
        idempotency_window=round(retention * rng.choice([0.25, 0.9]), 3),
    )
    return faults, settings, retention, options, rng.choice([100, 200])


def once(r: Rig, csv: Path, db: Path, options: RunOptions) -> RunSummary:
    try:
        return placeflow.run(
            [str(csv)], options=options, db=db, target=r.target, clock=r.now, step=r.step
        )
    except PlaceflowError as exc:  # stopped: its summary
        summary = getattr(exc, "summary", None)
        if summary is None:
            raise
        return summary  # type: ignore[no-any-return]  # RunStopped.summary is a RunSummary


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SEEDS))
def test_short_retention_and_resets_bill_no_row_twice(rig: Any, tmp_path: Path, seed: int) -> None:
    """No row billed twice by the sandbox and ledger = billed, whatever the seed lost."""
    faults, settings, retention, options, rows = draw(seed)
    r = rig(faults, **settings)
    csv, db = write_places(tmp_path / "p.csv", rows), tmp_path / "wh.duckdb"
    done = []
    for _ in range(RUNS):
        done.append(once(r, csv, db, options))
        assert r.rows_billed_twice() == 0, (faults, options)
        if done[-1].status == "completed":
            break
        r.clock.advance(600.0)
    r.clock.advance(3600.0)  # every job the run lost sight of has ended: the usage is final
    last = once(r, csv, db, options)
    assert r.rows_billed_twice() == 0, (faults, options)
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = dict(con.execute(
            "select kind, sum(credits) from credit_ledger group by kind"
        ).fetchall())  # fmt: skip
        assert {name: n for name, n in run_checks(con).items() if n} == {}
    paid = int(kinds.get("charge") or 0) + int(kinds.get("adjustment") or 0)
    assert paid == r.billed_credits(), (faults, options, retention, done, last)


@pytest.mark.slow
@pytest.mark.parametrize("retention", [1.0, 2.0, 5.0])
@pytest.mark.parametrize("seed", range(SEEDS))
def test_lost_requests_and_answers_with_default_options_bill_no_row_twice(
    rig: Any, tmp_path: Path, seed: int, retention: float
) -> None:
    """Issue 44: 15% of requests lost before processing and 15% of answers after, keys kept
    1, 2 or 5 s, default options (a 60 s idempotency window): the prompt replays re-attach, so
    the sandbox bills no row twice; the run completes and its ledger equals what it billed."""
    faults = FaultConfig(
        seed=seed, idempotency_retention_seconds=retention, drop_request_rate=0.15,
        drop_response_rate=0.15,
    )  # fmt: skip
    r = rig(faults, rows_per_second=500.0)
    csv, db = write_places(tmp_path / "p.csv", 400), tmp_path / "wh.duckdb"
    mode = "enrich" if seed % 2 else "validate"
    s = once(r, csv, db, RunOptions(route="job", mode=mode, chunk_rows=50))
    assert r.rows_billed_twice() == 0, (seed, retention, s.message)
    assert s.status == "completed" and s.possible_extra_credits == 0, (seed, s.message)
    assert r.sandbox.stats()["jobs"]["created"] == 8
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = dict(con.execute(
            "select kind, sum(credits) from credit_ledger group by kind"
        ).fetchall())  # fmt: skip
        assert {name: n for name, n in run_checks(con).items() if n} == {}
    paid = int(kinds.get("charge") or 0) + int(kinds.get("adjustment") or 0)
    assert paid == r.billed_credits() == s.charged, (seed, retention, s.message)
