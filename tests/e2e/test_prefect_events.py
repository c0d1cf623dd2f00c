"""A run's and a refresh's facts told to Prefect as events, read back from a real Prefect server:
each names the run and the warehouse as resources; the budget's warning is one of them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from placeflow.cli.main import main

from .conftest import ServeSandbox, places, run_flow, write_csv


def placeflow_events(api: str, run_ids: set[str], last: str, timeout: float = 60) -> list[Any]:
    """The server's placeflow.* events of `run_ids`, polled (bounded) until each run's `last`
    event is in: the server stores events in batches."""
    body = {"filter": {"event": {"prefix": ["placeflow."]}}, "limit": 50}
    deadline = time.monotonic() + timeout
    while True:
        reply = httpx.post(f"{api}/events/filter", json=body, timeout=30)
        assert reply.status_code == 200, reply.text
        found = [e for e in reply.json()["events"] if e["payload"].get("run_id") in run_ids]
        ended = {e["payload"]["run_id"] for e in found if e["event"] == last}
        if ended == run_ids or time.monotonic() > deadline:
            return found
        time.sleep(0.5)  # bounded poll for the server's own event store


@pytest.mark.slow  # two flow runs on the session's Prefect server: ~26 s on two cores
def test_a_run_and_a_refresh_tell_prefect_what_happened(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """Under a Prefect server a run and a refresh of its places each send started, credits
    charged and completed events, naming the run and the warehouse; a budget set to warn at
    10% sends the threshold event from the run that crossed it (the refresh after it, past the
    share already, sends none); the server holds them all once the flows returned."""
    serve_sandbox(fail_rate=0.0)
    db = str(tmp_path / "wh.duckdb")
    budget = ["budget", "set", "--credits", "40", "--per", "month", "--warn-at", "10"]
    assert main([*budget, "--db", db]) == 0
    csv = write_csv(tmp_path / "p.csv", places(12))
    state, ran = run_flow(inputs=[str(csv)], db=db, route="sync", dedupe="exact")
    assert state == "COMPLETED", ran
    from placeflow.flows.refresh import refresh_stale_places

    done = refresh_stale_places(db=db, older_than="0", return_state=True)
    refreshed = done.result(raise_on_failure=False)
    assert refreshed["status"] == "completed", refreshed
    runs = {ran["run_id"], refreshed["run_id"]}
    events = placeflow_events(prefect_api, runs, "placeflow.run.completed")
    for run_id in runs:
        names = {e["event"] for e in events if e["payload"]["run_id"] == run_id}
        told = {"placeflow.run.started", "placeflow.run.completed", "placeflow.credits.charged"}
        assert told <= names, names
        crossed = "placeflow.budget.threshold" in names
        assert crossed == (run_id == ran["run_id"]), names
    warehouse = f"placeflow.warehouse.{Path(db).resolve()}"
    for e in events:
        assert e["resource"]["prefect.resource.id"] == f"placeflow.run.{e['payload']['run_id']}"
        roles = {r["prefect.resource.id"]: r.get("prefect.resource.role") for r in e["related"]}
        assert roles.get(warehouse) == "warehouse", e["related"]
    charged = sum(
        e["payload"]["charged"] for e in events
        if e["event"] == "placeflow.credits.charged" and e["payload"]["run_id"] == ran["run_id"]
    )  # fmt: skip
    assert charged == ran["charged"] > 0
    kinds = {e["payload"]["run_id"]: e["payload"]["kind"] for e in events}
    assert kinds == {ran["run_id"]: "run", refreshed["run_id"]: "refresh"}


@pytest.mark.slow  # a research from the command line told to the session's Prefect server
def test_a_research_from_the_command_line_tells_prefect_what_happened(
    tmp_path: Path,
    serve_sandbox: ServeSandbox,
    prefect_api: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`placeflow research FILE` with PREFECT_API_URL set (no flow: research of files has
    none) sends its started, credits charged and completed events, naming the research run
    and the warehouse; the credits the events carry are what the sandbox charged."""
    import json

    served = serve_sandbox(fail_rate=0.0)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api)
    db = str(tmp_path / "wh.duckdb")
    csv = write_csv(tmp_path / "p.csv", places(12))
    argv = ["research", str(csv), "--field", "owner_person", "--db", db, "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    events = placeflow_events(prefect_api, {out["run_id"]}, "placeflow.run.completed")
    names = {e["event"] for e in events}
    told = {"placeflow.run.started", "placeflow.credits.charged", "placeflow.run.completed"}
    assert told <= names, names
    assert {e["payload"]["kind"] for e in events} == {"research"}
    warehouse = f"placeflow.warehouse.{Path(db).resolve()}"
    for e in events:
        roles = {r["prefect.resource.id"]: r.get("prefect.resource.role") for r in e["related"]}
        assert roles.get(warehouse) == "warehouse", e["related"]
    charged = sum(e["payload"]["charged"] for e in events if e["event"].endswith("charged"))
    assert charged == served.credits()["charged"] > 0
