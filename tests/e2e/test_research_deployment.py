"""The research-refresh deployment of the repository's prefect.yaml on a real Prefect server and
worker on loopback: deployed as docs/operations.md says, its monthly schedule and parameters as
written, and a run of it under the worker researching the warehouse's places (the worker's own
embedded sandbox: no key in its environment), the answers landed and exported."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from .prefect_server import PrefectServer, prefect_server, wait_for

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
FODORS = REPO / "data" / "samples" / "restaurants_fodors.csv"
DEPLOYMENT = "research-refresh"
ENDED = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
OWNER_FIELDS = ("owner_person", "owner_org")


def loaded_warehouse(db: Path) -> int:
    """The Fodor's sample validated into `db` from an embedded sandbox; its places."""
    import placeflow
    from placeflow.runner.target import embedded_sandbox

    options = placeflow.RunOptions(mode="validate", route="sync", dedupe="exact")
    with embedded_sandbox() as target:
        built = placeflow.run([str(FODORS)], options=options, db=db, target=target)
    assert built.status == "completed", built
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute("select count(distinct place_key) from run_places").fetchone()
    assert found is not None and found[0] > 0
    return int(found[0])


def ended(server: PrefectServer, flow_run_id: str, worker_log: Path) -> dict[str, Any]:
    """The flow run once it ended (its state as the server has it)."""

    def done() -> dict[str, Any] | None:
        run: dict[str, Any] = server.api("GET", f"/flow_runs/{flow_run_id}")
        return run if run["state_type"] in ENDED else None

    try:
        found: dict[str, Any] = wait_for(done, timeout=900, every=2, what=f"run {flow_run_id}")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{worker_log.read_text()[-6000:]}") from None
    return found


def run_and_wait(
    server: PrefectServer, name: str, params: dict[str, Any], worker_log: Path
) -> dict[str, Any]:
    out = server.prefect("deployment", "run", name, "--params", json.dumps(params)).stdout
    return ended(server, out.split("UUID:")[1].split()[0], worker_log)


def summary_markdown(server: PrefectServer, flow_run_id: str) -> str:
    body = {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}, "limit": 50}
    found = server.api("POST", "/artifacts/filter", body)
    (summary,) = [a for a in found if a["key"] == "research-summary"]
    return str(summary["data"])


def test_research_refresh_runs_from_prefect_yaml_under_a_worker(tmp_path: Path) -> None:
    """`prefect deploy --name research-refresh` from the repository: the monthly cron, the
    `placeflow` pool, concurrency 1, the owner lookup's parameters; run with the test's
    warehouse under a worker, the flow run completes, the places have their owner answers in
    research_answers and the Parquet export holds them; a second run finds nothing due and
    buys nothing; a budget under the estimate ends Failed, its message the refusal's."""
    db = tmp_path / "wh.duckdb"
    places = loaded_warehouse(db)
    with prefect_server(tmp_path / "prefect") as server:
        server.prefect("work-pool", "create", "placeflow", "--type", "process")
        server.prefect("--no-prompt", "deploy", "--name", DEPLOYMENT, cwd=REPO)
        (name,) = [
            line.split()[1]
            for line in server.prefect("deployment", "ls").stdout.splitlines()
            if f"/{DEPLOYMENT} " in line
        ]
        deployment = server.api("GET", f"/deployments/name/{name}")
        server.api("PATCH", f"/deployments/{deployment['id']}", {"paused": True})  # not the 1st
        assert [s["schedule"]["cron"] for s in deployment["schedules"]] == ["0 4 1 * *"]
        assert deployment["work_pool_name"] == "placeflow"
        assert deployment["global_concurrency_limit"]["limit"] == 1
        assert deployment["entrypoint"] == "src/placeflow/flows/research.py:research_stale_places"
        assert deployment["parameters"]["fields"] == list(OWNER_FIELDS)
        assert deployment["parameters"]["older_than"] == "30d"
        schema = deployment["parameter_openapi_schema"]["properties"]["export_to"]
        assert "[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]" in schema["pattern"]  # password=, any case
        worker = server.start(
            "worker",
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", "placeflow",
             "--type", "process", "--limit", "1"],
            cwd=REPO,
        )  # fmt: skip

        lake = tmp_path / "lake"
        params = {"db": str(db), "export_to": str(lake)}
        run = run_and_wait(server, name, params, worker)
        assert run["state_type"] == "COMPLETED", run["state"]["message"]
        markdown = summary_markdown(server, run["id"])
        assert ": completed" in markdown and "**Export**" in markdown

        with duckdb.connect(str(db), read_only=True) as con:
            ((status, submitted),) = con.execute(
                "select status, submitted from research_runs"
            ).fetchall()
            ((answered, fields),) = con.execute(
                "select count(distinct place_key), count(distinct field) from research_answers"
            ).fetchall()
        # the worker's sandbox fails about 1 % of places, as the real service may: those few
        # are neither sent again nor answered
        assert status == "completed" and places * 0.95 <= submitted <= places
        assert submitted * 0.95 <= answered <= submitted and fields == len(OWNER_FIELDS)
        charged = int(markdown.split("| credits charged | ")[1].split(" |")[0].replace(",", ""))
        assert answered <= charged <= submitted * len(OWNER_FIELDS)
        with duckdb.connect() as con:
            files = [str(p) for p in (lake / "research_answers").rglob("*.parquet")]
            ((exported,),) = con.execute(
                "select count(distinct place_key) from read_parquet(?)", [files]
            ).fetchall()
        assert exported == answered

        again = run_and_wait(server, name, {"db": str(db)}, worker)
        assert again["state_type"] == "COMPLETED", again["state"]["message"]
        not_due = "| not due (research younger than --max-age) | "
        assert not_due in summary_markdown(server, again["id"])
        refused = run_and_wait(
            server, name, {"db": str(db), "older_than": "0", "max_credits": 1}, worker
        )
        assert refused["state_type"] == "FAILED"
        assert "max-credits" in refused["state"]["message"]
    with duckdb.connect(str(db), read_only=True) as con:
        runs = dict(con.execute("select status, count(*) from research_runs group by 1").fetchall())
    assert runs == {"completed": 2, "refused": 1}
