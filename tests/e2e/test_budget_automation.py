"""The automation shipped beside prefect.yaml (automations.yaml) fires on the budget threshold
event of a run carried out under a real `prefect server start`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import ServeSandbox, places, write_csv
from .prefect_server import PrefectServer, prefect_server, wait_for

pytestmark = pytest.mark.slow  # a Prefect server of its own, with its automations services

ROOT = Path(__file__).resolve().parents[2]


def events_of(server: PrefectServer, prefix: str) -> list[dict[str, Any]]:
    body = {"filter": {"event": {"prefix": [prefix]}}, "limit": 50}
    found: list[dict[str, Any]] = server.api("POST", "/events/filter", body)["events"]
    return found


def test_the_threshold_automation_fires_when_a_run_passes_the_warning(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """With a budget set to warn at 10%, a CLI run under the server (PREFECT_API_URL: a flow
    run) sends placeflow.budget.threshold; the automation created from automations.yaml is
    triggered by it (the server's own prefect.automation.triggered event names it)."""
    sb = serve_sandbox(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(12)), tmp_path / "wh.duckdb"
    with prefect_server(tmp_path / "prefect-home") as server:
        server.prefect("automation", "create", "--from-file", str(ROOT / "automations.yaml"))
        (automation,) = server.api("POST", "/automations/filter", {})
        assert automation["name"] == "placeflow-budget-threshold"
        env = {**server.env, "PLACEFLOW_API_KEY": sb.sandbox.config.keys[0].key,
               "PLACEFLOW_BASE_URL": sb.base_url}  # fmt: skip
        placeflow = [sys.executable, "-m", "placeflow.cli"]
        budget = ["budget", "set", "--credits", "40", "--per", "month", "--warn-at", "10"]
        subprocess.run([*placeflow, *budget, "--db", str(db)], env=env, check=True, timeout=120)
        done = subprocess.run(
            [*placeflow, "run", str(csv), "--db", str(db), "--route", "sync", "--json"],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        ran = json.loads(done.stdout)
        assert ran["budget_warnings"], ran
        told = wait_for(
            lambda: [
                e for e in events_of(server, "placeflow.budget.threshold")
                if e["payload"]["run_id"] == ran["run_id"]
            ],
            timeout=120, what="the threshold event on the server",
        )  # fmt: skip
        assert told[0]["payload"]["credits"] == 40
        fired = wait_for(
            lambda: [
                e for e in events_of(server, "prefect.automation.triggered")
                if e["resource"]["prefect.resource.id"] == f"prefect.automation.{automation['id']}"
            ],
            timeout=180, what="the automation's triggered event",
        )  # fmt: skip
    assert fired, "the automation fired on the threshold event"
