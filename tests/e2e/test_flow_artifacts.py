"""The run and refresh flows' artifacts (markdown summary, rejects and changes tables, a link
to the HTML report) and their `export_to` ending, in process under the ephemeral Prefect
server, against sandboxes served on loopback (epoch 0 for the run, epoch 1 for the refresh)."""

from __future__ import annotations

import csv
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from uuid import UUID

import duckdb
import httpx
import pytest

from .conftest import ServeSandbox

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

ROOT = Path(__file__).resolve().parents[2]
FODORS = ROOT / "data" / "samples" / "restaurants_fodors.csv"
PLACES = 150
"""Rows of the Fodor's sample the run reads (enough for the next epoch to change some)."""
BAD_ROWS = 3
"""Rows without a name in the input: rejected by the read stage."""


def artifacts_of(flow_run_id: UUID) -> dict[str, Any]:
    """The flow run's artifacts by key (what the Prefect server stored)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])),
            limit=50,
            offset=0,
            sort=ArtifactSort.CREATED_DESC,
        )
    return {a.key: a for a in found if a.key}


def table(artifact: Any) -> list[dict[str, Any]]:
    data = artifact.data
    return list(json.loads(data) if isinstance(data, str) else data)


def parquet_rows(folder: Path) -> int:
    files = sorted(str(p) for p in folder.rglob("*.parquet"))
    if not files:
        return 0
    with duckdb.connect() as con:
        found = con.execute("select count(*) from read_parquet(?)", [files]).fetchone()
    return int(found[0]) if found else 0


def count(db: Path, sql: str, *params: object) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(sql, list(params)).fetchone()
    return int(found[0]) if found else 0


STAGES = ("read", "normalize", "dedupe", "fresh", "plan", "budget", "open", "account")
"""The run's stages called once each: its task runs."""


def task_runs_of(api: str, flow_run_id: UUID) -> dict[str, set[str]]:
    """The flow run's task runs by stage name, each with the states it reported, from the
    events the Prefect server stored (polled, bounded, until every stage's completion is in:
    the server stores events in batches)."""
    body = {
        "filter": {
            "event": {"prefix": ["prefect.task-run."]},
            "related": {"resources_in_roles": [[f"prefect.flow-run.{flow_run_id}", "flow-run"]]},
        },
        "limit": 50,  # the most the server returns in one page: three states per stage fit
    }
    deadline = time.monotonic() + 60
    while True:
        reply = httpx.post(f"{api}/events/filter", json=body, timeout=30)
        assert reply.status_code == 200, reply.text
        found: dict[str, set[str]] = {}
        for event in reply.json()["events"]:
            name = re.sub(r"-[0-9a-f]+$", "", event["resource"]["prefect.resource.name"])
            found.setdefault(name, set()).add(event["event"].rsplit(".", 1)[-1])
        if all("Completed" in found.get(s, ()) for s in STAGES) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)  # bounded poll for the server's own event store


@dataclass
class RunDone:
    db: Path
    lake: Path
    run_id: str
    artifacts: dict[str, Any]
    task_runs: dict[str, set[str]]
    jobs_posted: int


@pytest.fixture(scope="module")
def run_done(
    tmp_path_factory: pytest.TempPathFactory, serve_sandbox_module: ServeSandbox, prefect_api: str
) -> RunDone:
    """The run flow on the first rows of the Fodor's sample plus three rows without a name, at
    epoch 0, ending with an export to a Parquet folder."""
    from prefect.client.schemas.objects import State

    from placeflow.flows.run import run_files
    from placeflow.options import RunOptions

    work = tmp_path_factory.mktemp("artifacts")
    good, bad = work / "fodors.csv", work / "bad.csv"
    with FODORS.open(newline="") as f:
        rows = list(csv.reader(f))[: PLACES + 1]
    with good.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    with bad.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(rows[0])
        for i in range(BAD_ROWS):
            writer.writerow([f"x{i}", "", f"{i} nowhere street", "los angeles", "", "american"])
    db, lake = work / "wh" / "placeflow.duckdb", work / "lake"
    sandbox = serve_sandbox_module(epoch=0)
    state: State[Any] = run_files(  # type: ignore[assignment]  # sync call: a State
        inputs=[str(good), str(bad)],
        options=RunOptions(route="job", chunk_rows=100),
        db=str(db),
        export_to=str(lake),
        return_state=True,
    )
    assert state.is_completed(), state.message
    data = state.result()
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    artifacts = artifacts_of(flow_run_id)
    posted = sandbox.requests("POST /v1/jobs/enrich")
    tasks = task_runs_of(prefect_api, flow_run_id)
    return RunDone(db, lake, str(data["run_id"]), artifacts, tasks, posted)


def test_run_flow_publishes_summary_tables_and_report_link(run_done: RunDone) -> None:
    """A run flow leaves a markdown summary, a rejects table equal to the warehouse's rejects
    by reason, an (empty) changes table and a link to the HTML report written beside the
    warehouse, all under keys `prefect artifact inspect` accepts."""
    arts = run_done.artifacts
    for key in ("place-refresh-summary", "place-refresh-rejects", "place-refresh-changes"):
        assert key in arts, sorted(arts)
    assert all(re.fullmatch(r"[a-z0-9-]+", key) for key in arts)
    assert run_done.run_id in str(arts["place-refresh-summary"].data)
    with duckdb.connect(str(run_done.db), read_only=True) as con:
        stored = con.execute(
            "select coalesce(field, 'whole row'), reason, count(*) from rejects"
            " where run_id = ? group by all order by 3 desc, 1, 2",
            [run_done.run_id],
        ).fetchall()
    rejects = table(arts["place-refresh-rejects"])
    assert [(r["field"], r["reason"], r["rows"]) for r in rejects] == stored
    assert sum(r["rows"] for r in rejects) == BAD_ROWS
    assert table(arts["place-refresh-changes"]) == []
    link = re.search(r"\((file://[^)]+)\)", str(arts["place-refresh-report"].data))
    assert link is not None  # a link artifact is stored as its markdown: [text](url)
    written = Path(unquote(urlparse(link.group(1)).path))
    assert written == run_done.db.parent / "reports" / f"{run_done.run_id}.html"
    page = written.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and run_done.run_id in page


def test_run_flow_tasks_are_its_stages_not_its_chunks(run_done: RunDone) -> None:
    """The Prefect server saw a completed task run for each stage of the run (read to
    account) and none for the per-chunk calls (submit, fetch, load) of its two chunks, which
    the sandbox served and the warehouse loaded."""
    assert sorted(run_done.task_runs) == sorted(STAGES)
    assert all("Completed" in states for states in run_done.task_runs.values())
    jobs = count(run_done.db, "select count(*) from jobs where run_id = ?", run_done.run_id)
    loaded = count(
        run_done.db, "select count(*) from jobs where run_id = ? and loaded_at is not null",
        run_done.run_id,
    )  # fmt: skip
    assert jobs == loaded == run_done.jobs_posted == 2


def test_run_flow_ends_with_an_incremental_export(run_done: RunDone) -> None:
    """`export_to` sends the run's places to the Parquet folder (one row per place, as
    places_latest holds them) and the markdown summary says how many rows went."""
    latest = count(run_done.db, "select count(*) from places_latest")
    assert latest > PLACES // 2
    assert parquet_rows(run_done.lake / "places_latest") == latest
    markdown = str(run_done.artifacts["place-refresh-summary"].data)
    assert "**Export**" in markdown and "| places_latest |" in markdown
    assert f"| places_latest | {latest:,} |" in markdown


def test_refresh_flow_publishes_changes_and_exports_only_them(
    run_done: RunDone, serve_sandbox: ServeSandbox
) -> None:
    """A refresh at the next epoch publishes a changes table equal to the first rows of
    place_changes and a report link, and its export adds exactly the changes it found."""
    from prefect.client.schemas.objects import State

    from placeflow.flows.refresh import refresh_stale_places

    serve_sandbox(epoch=1)
    state: State[Any] = refresh_stale_places(  # type: ignore[assignment]  # sync call: a State
        db=str(run_done.db), older_than="0", export_to=str(run_done.lake), return_state=True
    )
    assert state.is_completed(), state.message
    run_id = str(state.result()["run_id"])
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    arts = artifacts_of(flow_run_id)
    assert {"refresh-summary", "refresh-rejects", "refresh-changes", "refresh-report"} <= set(arts)
    found = count(run_done.db, "select count(*) from place_changes where run_id = ?", run_id)
    assert found > 0
    changes = table(arts["refresh-changes"])
    assert len(changes) == min(found, 100)
    with duckdb.connect(str(run_done.db), read_only=True) as con:
        pairs = set(
            con.execute(
                "select place_key, field from place_changes where run_id = ?", [run_id]
            ).fetchall()
        )
    assert {(c["place_key"], c["field"]) for c in changes} <= pairs
    assert table(arts["refresh-rejects"]) == []
    assert parquet_rows(run_done.lake / "place_changes") == count(
        run_done.db, "select count(*) from place_changes"
    )
    assert "**Export**" in str(arts["refresh-summary"].data)
