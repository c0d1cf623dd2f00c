"""The repository's deployment on a real Prefect server: deployed to a process work pool with
an interval schedule, its scheduled runs picked up by a real worker, the warehouse updated."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; safe_load and safe_dump only

from .prefect_server import PrefectServer, prefect_server, wait_for

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples"
DEPLOYMENT = "scheduled-refresh"
POOL = "placeflow-test"
ACTIVE = {"PENDING", "RUNNING", "CANCELLING"}
BROKEN = {"FAILED", "CRASHED", "CANCELLED"}
FLOW_NAMES: dict[str, str] = {}
"""Flows named otherwise than their function (@flow(name=...)): deployments go by the name.
None today: `prefect deployment ls` lists run_files/file-run, refresh_stale_places/... ."""


@dataclass(frozen=True)
class Scheduled:
    """A flow to deploy: its entrypoint, its parameters (given the test's directory), and a
    check of the warehouse once a scheduled run of it completed."""

    entrypoint: str
    parameters: Callable[[Path], dict[str, Any]]
    check: Callable[[Path], None]
    deployment: str = DEPLOYMENT
    """The deployment of prefect.yaml it is deployed as (its other settings kept)."""


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def enriched_the_samples(db: Path) -> None:
    """A completed run landed enrichments for the sample restaurants."""
    runs = query(db, "select status from runs")
    assert runs and all(status == "completed" for (status,) in runs), runs
    ((enrichments,),) = query(db, "select count(*) from enrichments")
    assert enrichments > 0


RUN_FILES = Scheduled(
    entrypoint="src/placeflow/flows/run.py:run_files",
    parameters=lambda tmp: {
        "inputs": [str(SAMPLES / "restaurants_fodors.csv")],
        "options": {"mode": "enrich"},
        "db": str(tmp / "wh.duckdb"),
    },
    check=enriched_the_samples,
)


def deployment_file(tmp: Path, flow: Scheduled, interval: int) -> Path:
    """The repository's prefect.yaml with `flow`'s deployment (`scheduled-refresh` unless it
    names another) aimed at `flow`, the test's work pool and an interval schedule of
    `interval` seconds."""
    config = yaml.safe_load((REPO / "prefect.yaml").read_text())
    (deployment,) = (d for d in config["deployments"] if d["name"] == flow.deployment)
    assert deployment["schedules"], "the repository's deployment has a schedule"
    deployment.update(
        entrypoint=flow.entrypoint,
        parameters=flow.parameters(tmp),
        work_pool={"name": POOL},
        schedules=[{"interval": interval, "active": True}],
    )
    config["deployments"] = [deployment]
    path = tmp / "prefect.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def first_scheduled_completion(server: PrefectServer, deployment_id: str, worker_log: Path) -> Any:
    """Wait for a scheduled run of the deployment to complete; fail at once if one breaks."""

    def done() -> dict[str, Any] | None:
        runs = server.flow_runs(deployment_id)
        broken = [r for r in runs if r["state_type"] in BROKEN]
        if broken:
            raise AssertionError(
                f"run {broken[0]['name']} ended {broken[0]['state_name']}:"
                f" {broken[0]['state']['message']}\n{worker_log.read_text()[-6000:]}"
            )
        completed = [r for r in runs if r["state_type"] == "COMPLETED" and r["auto_scheduled"]]
        return completed[0] if completed else None

    return wait_for(done, timeout=900, every=2, what="a scheduled run to complete")


def probe_ran(db: Path) -> None:
    """The probe flow recorded at least one run."""
    ((runs,),) = query(db, "select count(*) from probe_runs")
    assert runs >= 1


PROBE = Scheduled(
    entrypoint="tests/e2e/scheduled_probe.py:scheduled_probe",
    parameters=lambda tmp: {"db": str(tmp / "wh.duckdb")},
    check=probe_ran,
)


def sample_warehouse(tmp: Path) -> dict[str, Any]:
    """The README's main job loaded into the test's warehouse (an embedded sandbox); the
    refresh's parameters: every place re-checked, within a budget smaller than their cost."""
    import placeflow
    from placeflow.runner.target import embedded_sandbox

    db = tmp / "wh.duckdb"
    with embedded_sandbox() as target:
        built = placeflow.run(sorted(str(p) for p in SAMPLES.glob("*.csv")), db=db, target=target)
    assert built.status == "completed"
    return {"db": str(db), "older_than": "0", "mode": "enrich", "max_credits": 300}


def refreshed_the_warehouse(db: Path) -> None:
    """Besides the job that built it, completed refresh runs re-checked 300 places each,
    recorded as runs of the warehouse, their changes (if any) in place_changes."""
    refreshes = query(
        db,
        "select runs.status, runs.submitted, run_credits.charged"
        " from runs left join run_credits using (run_id)"
        " where inputs like '%warehouse:%'",
    )
    assert refreshes and all(r[0] == "completed" and r[1] == 300 for r in refreshes), refreshes
    assert all(charged <= 300 for (_, _, charged) in refreshes)
    ((orphans,),) = query(
        db, "select count(*) from place_changes where run_id not in (select run_id from runs)"
    )
    assert orphans == 0


REFRESH = Scheduled(
    entrypoint="src/placeflow/flows/refresh.py:refresh_stale_places",
    parameters=sample_warehouse,
    check=refreshed_the_warehouse,
)


def validated_fodors(tmp: Path) -> dict[str, Any]:
    """The Fodor's sample validated into the test's warehouse (an embedded sandbox); the
    research's parameters: the deployment's owner lookup of every place, within a budget."""
    import placeflow
    from placeflow.runner.target import embedded_sandbox

    db = tmp / "wh.duckdb"
    options = placeflow.RunOptions(mode="validate", route="sync", dedupe="exact")
    with embedded_sandbox() as target:
        built = placeflow.run([str(SAMPLES / "restaurants_fodors.csv")], options=options, db=db,
                              target=target)  # fmt: skip
    assert built.status == "completed"
    return {"db": str(db), "older_than": "30d", "max_credits": 5000}


def researched_the_warehouse(db: Path) -> None:
    """A scheduled research completed with owner answers landed; the later ones bought again
    at most the few places whose research errored (free; the sandbox fails about 1 %)."""
    runs = query(db, "select status, submitted from research_runs order by created_at")
    assert runs and all(status == "completed" for status, _ in runs), runs
    first = runs[0][1]
    assert first > 0 and all(submitted <= first // 20 for _, submitted in runs[1:]), runs
    ((places, fields),) = query(
        db, "select count(distinct place_key), count(distinct field) from research_answers"
    )
    assert places > 0 and fields == 2


RESEARCH = Scheduled(
    entrypoint="src/placeflow/flows/research.py:research_stale_places",
    parameters=validated_fodors,
    check=researched_the_warehouse,
    deployment="research-refresh",
)


@pytest.mark.parametrize(
    "flow", [PROBE, RUN_FILES, REFRESH, RESEARCH], ids=["probe", "run_files", "refresh", "research"]
)
def test_a_scheduled_run_completes_under_a_worker(tmp_path: Path, flow: Scheduled) -> None:
    """`prefect deploy` of prefect.yaml to a process pool with a 5 s interval: the scheduler
    creates runs, a worker runs one to completion, and it updated the warehouse."""
    with prefect_server(tmp_path / "prefect") as server:
        server.prefect("work-pool", "create", POOL, "--type", "process")
        server.prefect(
            "--no-prompt",
            "deploy",
            "--prefect-file",
            str(deployment_file(tmp_path, flow, interval=5)),
            "--name",
            flow.deployment,
            cwd=REPO,
        )
        listed = server.prefect("deployment", "ls").stdout
        function = flow.entrypoint.rsplit(":", 1)[1]
        flow_name = FLOW_NAMES.get(function, function)
        assert f"{flow_name}/{flow.deployment}" in listed
        deployment = server.api("GET", f"/deployments/name/{flow_name}/{flow.deployment}")
        assert deployment["work_pool_name"] == POOL
        assert [s["schedule"]["interval"] for s in deployment["schedules"]] == [5.0]
        wait_for(
            lambda: server.flow_runs(deployment["id"]), timeout=300, what="the scheduler's runs"
        )
        worker = server.start(
            "worker",
            [
                sys.executable,
                "-m",
                "prefect",
                "worker",
                "start",
                "--pool",
                POOL,
                "--type",
                "process",
                "--limit",
                "1",
            ],
            cwd=REPO,
        )
        run = first_scheduled_completion(server, deployment["id"], worker)
        assert run["state_name"] == "Completed"
        server.api("PATCH", f"/deployments/{deployment['id']}", {"paused": True})
        wait_for(
            lambda: not any(r["state_type"] in ACTIVE for r in server.flow_runs(deployment["id"])),
            timeout=600,
            every=2,
            what="the runs under way to end",
        )
    flow.check(tmp_path / "wh.duckdb")
