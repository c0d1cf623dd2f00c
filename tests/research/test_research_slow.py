"""The issue's figures, slow (`pytest -m slow`): 1,000 places x 3 fields with identity through
the CLI, and the crash matrix (SIGKILL at seeded moments of sending, then the same command)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from .conftest import FIELDS, KEY, SCALE, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PER_ROW = 4


def command(csv: Path, db: Path, kill_at: str | None = None) -> list[str]:
    """The research command; with `kill_at` (MOMENT:N) the tests' wrapper of it that SIGKILLs
    itself at that moment (tests/research/kill_at.py)."""
    fields = [a for f in FIELDS for a in ("--field", f)]
    module = ["tests.research.kill_at", kill_at] if kill_at else ["placeflow.cli.research"]
    return [sys.executable, "-m", *module, "research", str(csv), *fields,
            "--verify-identity", "--db", str(db), "--json"]  # fmt: skip


def environment(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    env.update(
        PLACEFLOW_API_KEY=KEY,
        PLACEFLOW_BASE_URL=base_url,
        PLACEFLOW_RATE_LIMITS=f"10/{SCALE:g}s,100/{60 * SCALE:g}s",
    )
    return env


def cli(csv: Path, db: Path, base_url: str, kill_at: str | None = None) -> Any:
    done = subprocess.run(
        command(csv, db, kill_at), env=environment(base_url), cwd=ROOT,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if kill_at:
        assert done.returncode == -9, (done.returncode, done.stderr[-2000:])
        return None
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["exit_code"] == done.returncode
    return out


def once_each(db: Path) -> tuple[int, int]:
    """(place-field pairs answered, the most times any was answered) over all runs."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "select count(*), coalesce(max(n), 0) from (select place_key, field, count(*) n"
            " from research_answers where status <> 'error' group by all)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_thousand_places_three_fields_with_identity(tmp_path: Path, serve: ServeSandbox) -> None:
    """charged = ledger = usage delta = the sandbox's charge; the estimate exceeds the charge
    by exactly the failed rows; every place has 3 answers or a recorded error; a rerun charges 0;
    requests within 1.05x of the least (100 of 10 places)."""
    sb = serve()
    csv, db = write_csv(tmp_path / "p.csv", places(1000)), tmp_path / "wh.duckdb"
    out = cli(csv, db, sb.base_url)
    assert out["exit_code"] == 0 and out["status"] == "completed", out
    assert out["charged"] == out["usage_delta"] == sb.credits()["charged"]
    assert out["charged"] == sb.research()["credits"]
    assert out["credits_estimated"] - out["charged"] == out["failed"] * PER_ROW
    assert out["succeeded"] + out["failed"] == 1000
    with duckdb.connect(str(db), read_only=True) as con:
        per_place = con.execute(
            "select count(*), count(*) filter (where status = 'error' and error is null)"
            " from research_answers group by place_key"
        ).fetchall()
        ledger = con.execute("select sum(credits) from research_ledger").fetchone()
    assert len(per_place) == 1000 and {r for r in per_place} == {(3, 0)}
    assert ledger is not None and ledger[0] == out["charged"]
    assert sb.all_requests() <= 1.05 * 100
    again = cli(csv, db, sb.base_url)
    assert again["exit_code"] == 0 and again["charged"] == 0 and again["usage_delta"] == 0
    assert again["submitted"] == out["failed"]


MOMENTS = ("sent", "received", "answered")


@pytest.mark.parametrize("seed", range(int(os.environ.get("CRASH_SEEDS", "9"))))
def test_killed_while_sending_then_resumed(tmp_path: Path, serve: ServeSandbox, seed: int) -> None:
    """SIGKILL at a seeded moment of a seeded request, then the same command: no place or field
    billed twice on the sandbox's ledger, every place answered once, ledger = usage delta."""
    rng = random.Random(seed)
    moment, nth = MOMENTS[seed % 3], rng.randint(1, 8)
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(80)), tmp_path / "wh.duckdb"
    cli(csv, db, sb.base_url, kill_at=f"{moment}:{nth}")
    out = cli(csv, db, sb.base_url)
    assert out["exit_code"] == 0 and out["status"] == "completed", out
    stats = sb.research()
    assert stats["billed_twice"] == [] and stats["identity_billed_twice"] == []
    assert stats["billed_places"] == 80
    assert once_each(db) == (240, 1)
    assert out["charged"] == sb.credits()["charged"] == out["usage_delta"] == 80 * PER_ROW
