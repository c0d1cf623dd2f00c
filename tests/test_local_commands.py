"""`placeflow run`, `resume` and `refresh` without a Prefect API configured (issue 37): the same
stages through the library, in a fresh interpreter that never imports Prefect, the artifacts
written as files in the run's folder, the money as the sandbox itself counts it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from placeflow.emulator import Sandbox
from tests.sandbox_target import served as served_sandbox
from tests.test_run import write_places

KEY = "sk_local_paid_key_37"
PROBE = """
import sys
from placeflow.cli.main import main

code = main(sys.argv[1:])
print("PREFECT-LOADED" if "prefect" in sys.modules else "PREFECT-NOT-LOADED", file=sys.stderr)
sys.exit(code)
"""


@pytest.fixture
def sandbox() -> Iterator[tuple[Sandbox, str]]:
    with served_sandbox(KEY) as (box, target):
        yield box, target.base_url


def cli(base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`placeflow ARGS` in a fresh interpreter, no PREFECT_* setting, pointed at the sandbox;
    stderr ends saying whether Prefect was imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PLACEFLOW_"))}
    env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=base_url)
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def charged(box: Sandbox) -> int:
    return int(box.stats()["keys"][KEY]["credits"]["charged"])


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_run_without_prefect_writes_its_artifacts_as_files(
    sandbox: tuple[Sandbox, str], tmp_path: Path
) -> None:
    """A run with no Prefect API: exit 0, Prefect never imported, the sandbox charged one credit
    per place; summary.md, rejects.csv, changes.csv and report.url in runs/RUN_ID/, the HTML
    report they link to beside the warehouse."""
    box, url = sandbox
    places = write_places(tmp_path / "p.csv", 6)
    with places.open("a", encoding="utf-8") as f:
        f.write("bad,,1 Nowhere Road,Springfield,USA\n")  # no name: one reject
    db = tmp_path / "wh" / "w.duckdb"
    done = cli(url, "run", str(places), "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PREFECT-NOT-LOADED" in done.stderr
    doc = json.loads(done.stdout)
    run_id = doc["run_id"]
    assert doc["status"] == "completed" and doc["succeeded"] + doc["failed"] == 6
    assert charged(box) == doc["succeeded"] == doc["charged"]  # as the sandbox counts it
    folder = db.parent / "runs" / run_id
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    assert f"`{run_id}`: completed" in summary and "credits charged" in summary
    assert rows_of(folder / "rejects.csv") == [
        {"field": "poi_name", "reason": "poi_name is missing", "rows": "1"}
    ]
    assert (folder / "changes.csv").read_text(encoding="utf-8").startswith("detected_at,")
    report = Path(doc["report"])
    assert report == db.parent / "reports" / f"{run_id}.html" and report.is_file()
    assert report.as_uri() in (folder / "report.url").read_text(encoding="utf-8")
    assert report.as_uri() in summary


def test_resume_and_refresh_without_prefect(sandbox: tuple[Sandbox, str], tmp_path: Path) -> None:
    """`resume` of a stopped run and `refresh` of the warehouse, no Prefect API: each ends as the
    flow would (completed, exit 0) without importing Prefect; the resume buys nothing and the
    refresh what it says it charged, as the sandbox counts it; the refresh leaves its summary
    in its own run folder."""
    box, url = sandbox
    db = tmp_path / "w.duckdb"
    done = cli(url, "run", str(write_places(tmp_path / "p.csv", 5)), "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    run_id = json.loads(done.stdout)["run_id"]
    with duckdb.connect(str(db)) as con:  # as a Ctrl-C leaves it
        con.execute("update runs set status = 'interrupted' where run_id = ?", [run_id])
    before = charged(box)
    resumed = cli(url, "resume", run_id, "--db", str(db), "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "PREFECT-NOT-LOADED" in resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    assert charged(box) == before  # nothing left to buy: nothing bought
    refreshed = cli(url, "refresh", "--db", str(db), "--older-than", "0", "--json")
    assert refreshed.returncode == 0, refreshed.stderr[-3000:]
    assert "PREFECT-NOT-LOADED" in refreshed.stderr
    doc = json.loads(refreshed.stdout)
    assert doc["status"] == "completed" and doc["run_id"] != run_id
    assert doc["charged"] > 0 and charged(box) == before + doc["charged"]
    summary = (db.parent / "runs" / doc["run_id"] / "summary.md").read_text(encoding="utf-8")
    assert f"`{doc['run_id']}`" in summary
