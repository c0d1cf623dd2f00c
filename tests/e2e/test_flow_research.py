"""The research_stale_places flow in process under the session's Prefect test server, against a
sandbox served on loopback: the warehouse's places whose research is older than a month
researched once, a limit taking places that are due, a budget refused before spending ending
Failed, each asserted on what the sandbox billed and on the warehouse's rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator.research import research_stats
from placeflow.errors import EXIT_REFUSED, FailedResult
from placeflow.fields import RateLimits
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

from .conftest import KEY, Served, ServeSandbox, places, write_csv

pytestmark = pytest.mark.usefixtures("prefect_api")

PLACES = 12
FIELDS = ["owner_person", "owner_org"]
PER_PLACE = len(FIELDS)
"""Credits a place costs (the sandbox's rate card: one per field, no identity check)."""


def loaded_warehouse(tmp_path: Path, sb: Served) -> tuple[Path, set[str]]:
    """A warehouse a run of PLACES places (sync, exact dedupe: quick) loaded from the sandbox;
    the place_keys it sent."""
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "loaded.csv", places(PLACES))
    target = Target(
        base_url=sb.base_url, api_key=Secret(KEY), label="sandbox",
        limits=RateLimits.for_tier("paid"),
    )  # fmt: skip
    options = placeflow.RunOptions(route="sync", dedupe="exact", mode="validate")
    summary = placeflow.run([str(csv)], options=options, db=db, target=target)
    assert summary.status == "completed" and summary.submitted == PLACES, summary
    with duckdb.connect(str(db), read_only=True) as con:
        keys = {str(k) for (k,) in con.execute("select place_key from run_places").fetchall()}
    return db, keys


def research_flow(**params: Any) -> tuple[str, dict[str, Any], Any]:
    """research_stale_places in this process: its final state's name, summary and state."""
    from placeflow.flows.research import research_stale_places

    state = research_stale_places(**params, return_state=True)
    data = state.result(raise_on_failure=False)
    data = dict(data) if isinstance(data, FailedResult) else data  # a failed run's summary
    assert isinstance(data, dict), data
    return str(state.type.value), data, state


def answered(db: Path) -> dict[str, int]:
    """research_answers rows per place."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select place_key, count(*) from research_answers group by 1")
        return {str(k): int(n) for k, n in rows.fetchall()}


def research_summary(state: Any) -> str:
    """The markdown of the flow run's research-summary artifact."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
        )
    (summary,) = [a for a in found if a.key == "research-summary"]
    return str(summary.data)


def test_due_places_are_researched_once_and_a_second_run_buys_nothing(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Every place the warehouse holds is researched once (the sandbox billed each place's
    fields once, the flow's charge is the sandbox's), its answers in research_answers; the
    same flow again finds nothing due and sends no request."""
    sb = serve_sandbox(fail_rate=0.0)
    db, keys = loaded_warehouse(tmp_path, sb)
    state, out, flow_state = research_flow(
        db=str(db), fields=FIELDS, older_than="30d", max_credits=1000
    )
    assert state == "COMPLETED", out
    assert out["status"] == "completed" and out["exit_code"] == 0
    assert out["submitted"] == PLACES and out["charged"] == PLACES * PER_PLACE
    stats = research_stats(sb.sandbox.backend)
    assert stats["billed_places"] == PLACES and stats["billed_twice"] == []
    assert stats["credits"] == out["charged"] == out["usage_delta"]
    assert answered(db) == dict.fromkeys(keys, PER_PLACE)
    with duckdb.connect(str(db), read_only=True) as con:
        ((status, inputs),) = con.execute("select status, inputs from research_runs").fetchall()
    assert status == "completed" and "warehouse:" in inputs
    assert f"placeflow research `{out['run_id']}`: completed" in research_summary(flow_state)

    requests = sb.requests("POST /v1/deep-research")
    state, again, _ = research_flow(db=str(db), fields=FIELDS, older_than="30d")
    assert state == "COMPLETED", again
    assert (again["rows_read"], again["not_due"], again["charged"]) == (0, PLACES, 0)
    assert sb.requests("POST /v1/deep-research") == requests
    assert research_stats(sb.sandbox.backend)["credits"] == stats["credits"]


def test_a_limit_takes_places_due_so_the_next_run_goes_on(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """limit=5 researches 5 places; the next run with the same limit takes 5 others (the
    fresh ones are not due, so not chosen again); no place is billed twice."""
    sb = serve_sandbox(fail_rate=0.0)
    db, keys = loaded_warehouse(tmp_path, sb)
    state, first, _ = research_flow(db=str(db), fields=FIELDS, limit=5)
    assert state == "COMPLETED" and first["submitted"] == 5, first
    done = set(answered(db))
    state, second, _ = research_flow(db=str(db), fields=FIELDS, limit=5)
    assert state == "COMPLETED" and second["submitted"] == 5, second
    assert second["not_due"] == 5
    assert len(set(answered(db)) - done) == 5 and set(answered(db)) < keys
    stats = research_stats(sb.sandbox.backend)
    assert stats["billed_places"] == 10 and stats["billed_twice"] == []


def test_a_budget_under_the_estimate_is_refused_and_the_flow_run_fails(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """max_credits below the estimate: nothing sent to research, nothing charged, the flow run
    Failed with exit code 3 and the refusal's message (in its summary artifact too)."""
    sb = serve_sandbox(fail_rate=0.0)
    db, _ = loaded_warehouse(tmp_path, sb)
    state, out, flow_state = research_flow(db=str(db), fields=FIELDS, max_credits=3)
    assert state == "FAILED", out
    assert out["exit_code"] == EXIT_REFUSED and out["status"] == "refused"
    assert out["charged"] == 0 and "max-credits" in out["message"]
    assert flow_state.message == out["message"]
    assert sb.requests("POST /v1/deep-research") == 0
    assert research_stats(sb.sandbox.backend)["credits"] == 0
    assert answered(db) == {}
    assert out["message"] in research_summary(flow_state)


def test_bad_parameters_fail_the_flow_run_before_anything_is_sent(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """No warehouse at db, a field spec the spec refuses, or a password in export_to: the flow
    run ends Failed with exit code 2 and says why; the sandbox saw no request."""
    sb = serve_sandbox(fail_rate=0.0)
    missing = str(tmp_path / "none.duckdb")
    state, out, _ = research_flow(db=missing, fields=FIELDS)
    assert (state, out["exit_code"]) == ("FAILED", 2) and "no warehouse" in out["message"]
    state, out, _ = research_flow(db=missing, fields=["owner_person:colour"])
    assert (state, out["exit_code"]) == ("FAILED", 2) and "colour" in out["message"]
    leaky = "postgresql://etl:s3cret@127.0.0.1/wh"
    state, out, _ = research_flow(db=missing, fields=FIELDS, export_to=leaky)
    assert (state, out["exit_code"]) == ("FAILED", 2) and "s3cret" not in out["message"]
    assert not Path(missing).exists()
    assert sb.stats()["requests"] == {}
