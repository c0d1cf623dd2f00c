"""The artifacts of a `placeflow run` read the way Prefect users read them (issue 12: 12): a
real `prefect server start` on loopback, the run pointed at it, then Prefect's own CLI,
`prefect artifact ls` and `prefect artifact inspect KEY`, as subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import places, write_csv
from .prefect_server import prefect_server

pytestmark = pytest.mark.slow  # a Prefect server of its own and a placeflow run: minutes

ROOT = Path(__file__).resolve().parents[2]
KEYS = (
    "place-refresh-summary",
    "place-refresh-rejects",
    "place-refresh-changes",
    "place-refresh-report",
)


def test_prefect_artifact_inspect_reads_the_run_artifacts(tmp_path: Path) -> None:
    """After a run against a real Prefect server (PREFECT_API_URL set: the CLI runs as a flow
    run, issue 37), the server holds its completed `run_files` flow run, `prefect artifact ls`
    lists the run's keys and `prefect artifact inspect KEY` exits 0 with the run's summary,
    rejects and report; no artifact files are written beside the warehouse."""
    rows = [*places(8), {"id": "bad", "name": "", "address": "", "city": "", "country": ""}]
    csv, db = write_csv(tmp_path / "p.csv", rows), tmp_path / "wh.duckdb"
    with prefect_server(tmp_path / "prefect-home") as server:
        done = subprocess.run(
            [sys.executable, "-m", "placeflow.cli", "run", str(csv), "--db", str(db), "--json"],
            env=server.env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        run_id = json.loads(done.stdout)["run_id"]
        flow_runs = server.api("POST", "/flow_runs/filter", {"limit": 10})
        assert [(r["parameters"].get("db"), r["state_type"]) for r in flow_runs] == [
            (str(db), "COMPLETED")
        ]
        flow = server.api("GET", f"/flows/{flow_runs[0]['flow_id']}")
        assert flow["name"] == "run_files"
        listed = server.prefect("artifact", "ls").stdout
        for key in KEYS:
            assert key in listed, listed
        found = {}
        for key in KEYS:
            shown = server.prefect("artifact", "inspect", key, "--output", "json").stdout
            (artifact,) = json.loads(shown)  # one run: one version of each key
            assert artifact["key"] == key
            found[key] = artifact
        pretty = server.prefect("artifact", "inspect", "place-refresh-summary").stdout
    summary = found["place-refresh-summary"]
    assert summary["type"] == "markdown" and run_id in summary["data"]
    assert "credits charged" in summary["data"] and run_id in pretty
    rejects = found["place-refresh-rejects"]
    assert rejects["type"] == "table" and "poi_name" in str(rejects["data"])
    report = found["place-refresh-report"]
    assert f"{run_id}.html" in str(report["data"])  # Prefect stores a link as markdown
    assert not (tmp_path / "runs" / run_id / "summary.md").exists()  # in Prefect, not files
