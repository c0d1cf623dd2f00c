"""The crash matrix: SIGKILL `placeflow run` at seeded random moments, resume, compare.

For each seed the run is killed somewhere between start-up and its end, then finished by the
same command; its outcomes must equal those of an uninterrupted run against a sandbox with the
same seed, and the sandbox's ledger must show every job settled once. Slow: `pytest -m slow`.
"""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from .conftest import KEY, ServeSandbox, places, write_csv
from .test_kill_resume import ROOT, command, environment

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]

OUTCOME = (
    "place_key, success, operational_status, existence_confidence, closure_reason,"
    " phone_number, website_url, opening_hours_value::varchar, error_code"
)


def outcomes(db: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"select {OUTCOME} from enrichments order by place_key").fetchall()


def finish_in_process(csv: Path, db: Path) -> dict[str, Any]:
    from placeflow.flows.run import run_files
    from placeflow.options import RunOptions

    state = run_files(
        inputs=[str(csv)],
        db=str(db),
        options=RunOptions(route="job", chunk_rows=20),
        return_state=True,
    )
    summary = state.result(raise_on_failure=False)
    assert isinstance(summary, dict) and state.is_completed(), summary
    return summary


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory, serve_sandbox_module: ServeSandbox
) -> list[tuple[Any, ...]]:
    """The outcomes of an uninterrupted run."""
    tmp = tmp_path_factory.mktemp("reference")
    csv = write_csv(tmp / "p.csv", places(100))
    serve_sandbox_module(rows_per_second=100.0)
    finish_in_process(csv, tmp / "wh.duckdb")
    return outcomes(tmp / "wh.duckdb")


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("CRASH_SEEDS", "20"))))
def test_killed_at_a_random_moment(
    tmp_path: Path,
    serve_sandbox: ServeSandbox,
    prefect_api: str,
    reference: list[tuple[Any, ...]],
    seed: int,
) -> None:
    """Killed at a seeded random moment and run again: same outcomes, each job paid once."""
    sb = serve_sandbox(rows_per_second=100.0)
    csv, db = write_csv(tmp_path / "p.csv", places(100)), tmp_path / "wh.duckdb"
    delay = random.Random(seed).uniform(3.0, 14.0)
    with subprocess.Popen(
        [*command(csv, db), "--chunk-rows", "20"],
        env=environment(sb.base_url, prefect_api),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as proc:
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.kill()
    finish_in_process(csv, db)  # resumes the killed run, or finds everything fresh
    stats = sb.stats()
    key = stats["keys"][KEY]
    assert key["double_charged_refs"] == [] and stats["duplicate_submissions"] == 0
    assert stats["jobs"]["created"] == 5 and key["credits"]["held"] == 0
    with duckdb.connect(str(db), read_only=True) as con:
        (ledger,) = con.execute(
            "select coalesce(sum(credits), 0) from credit_ledger where kind = 'charge'"
        ).fetchone() or (0,)
    assert key["credits"]["charged"] == ledger
    assert outcomes(db) == reference
