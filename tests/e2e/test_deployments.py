"""Both deployments of the repository's prefect.yaml on a real Prefect server and worker: the
file-run deployment run with its own parameters and an export, its PostgreSQL password from a
Secret block; and a password put in `export_to` refused before anything is done, and absent
from what Prefect stores (its API and its SQLite database)."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from deltalake import DeltaTable

from tests.pgserver import PgServer, PostgresUnavailable, start

from .prefect_server import PrefectServer, prefect_server, wait_for

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
FODORS = REPO / "data" / "samples" / "restaurants_fodors.csv"
FODORS_ROWS = 533
FILE_RUN = "run_files/file-run"
REFRESH = "refresh_stale_places/scheduled-refresh"
ENDED = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
PASSWORD = "Pr3fectMustN0tKeepThis"


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    try:
        with start() as server:
            yield server
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectServer]:
    """A server with both deployments of prefect.yaml, deployed as the docs say, and a worker
    of the `placeflow` pool running flow runs from the repository."""
    home = tmp_path_factory.mktemp("prefect")
    with prefect_server(home) as srv:
        srv.env.pop("PGPASSWORD", None)  # the worker's environment holds no password
        srv.prefect("work-pool", "create", "placeflow", "--type", "process")
        srv.prefect("--no-prompt", "deploy", "--all", cwd=REPO)
        srv.start(
            "worker",
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", "placeflow",
             "--type", "process", "--limit", "1"],
            cwd=REPO,
        )  # fmt: skip
        yield srv


def run_deployment(server: PrefectServer, name: str, params: dict[str, Any]) -> dict[str, Any]:
    """`prefect deployment run NAME --params JSON`, then the flow run once it ended."""
    out = server.prefect("deployment", "run", name, "--params", json.dumps(params)).stdout
    flow_run_id = out.split("UUID:")[1].split()[0]
    return ended(server, flow_run_id)


def ended(server: PrefectServer, flow_run_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        run: dict[str, Any] = server.api("GET", f"/flow_runs/{flow_run_id}")
        return run if run["state_type"] in ENDED else None

    found: dict[str, Any] = wait_for(done, timeout=900, every=2, what=f"flow run {flow_run_id}")
    return found


def stored_text(home: Path) -> list[str]:
    """Every text value of every table of the server's SQLite database, as SQL reads it."""
    con = sqlite3.connect(home / "prefect.db")
    try:
        values = []
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        for table in tables:
            for row in con.execute(f'select * from "{table}"'):
                values += [str(v) for v in row if isinstance(v, str | bytes)]
        return values
    finally:
        con.close()


def test_both_deployments_deploy_from_prefect_yaml(server: PrefectServer) -> None:
    """`prefect deploy --all` makes scheduled-refresh (its weekly cron) and file-run (no
    schedule), both on the `placeflow` pool with the export parameters, export_to's schema
    refusing a password."""
    listed = server.prefect("deployment", "ls").stdout
    assert FILE_RUN in listed and REFRESH in listed
    refresh = server.api("GET", f"/deployments/name/{REFRESH}")
    server.api("PATCH", f"/deployments/{refresh['id']}", {"paused": True})  # not this Monday
    assert [s["schedule"]["cron"] for s in refresh["schedules"]] == ["0 3 * * 1"]
    file_run = server.api("GET", f"/deployments/name/{FILE_RUN}")
    assert file_run["schedules"] == [] and file_run["work_pool_name"] == "placeflow"
    assert file_run["entrypoint"] == "src/placeflow/flows/run.py:run_files"
    assert file_run["enforce_parameter_schema"] is True
    for deployment in (refresh, file_run):
        assert {"export_to", "pg_password_block"} <= set(deployment["parameters"])
        schema = deployment["parameter_openapi_schema"]["properties"]["export_to"]
        refusing = re.compile(schema["pattern"])  # as Prefect checks a run's parameters
        assert refusing.search("postgresql://pg.example/db") is not None
        assert refusing.search("postgresql://pg.example/db?PassWord=x") is None  # any case
        assert refusing.search("postgresql://u:x@pg.example/db") is None


def test_file_run_with_its_parameters_exports_with_a_secret_block(
    server: PrefectServer, pg: PgServer, tmp_path: Path
) -> None:
    """file-run with --params: the fodors file enriched into the test's warehouse, exported to
    PostgreSQL with the password of a Secret block (the worker has no PGPASSWORD), then again
    to a Delta folder; both hold every place with its name and a crosswalk row per input row."""
    subprocess.run(
        [sys.executable, "-c", "import sys; from prefect.blocks.system import Secret;"
         " Secret(value=sys.argv[1]).save('warehouse-password')", pg.password],
        env=server.env, check=True, timeout=300,
    )  # fmt: skip
    db = tmp_path / "wh.duckdb"
    params = {"inputs": [str(FODORS)], "options": {"mode": "enrich"}, "db": str(db),
              "export_to": pg.url(), "pg_password_block": "warehouse-password"}  # fmt: skip
    run = run_deployment(server, FILE_RUN, params)
    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    with duckdb.connect(str(db), read_only=True) as con:
        ((places,),) = con.execute("select count(*) from places_latest").fetchall()
    assert pg.psql("select count(*), count(poi_name) from places_latest").strip() == (
        f"{places}|{places}"
    )
    assert pg.psql("select count(*) from crosswalk").strip() == str(FODORS_ROWS)

    lake = tmp_path / "lake"
    again = run_deployment(
        server, FILE_RUN, {**params, "export_to": f"delta://{lake}", "pg_password_block": None}
    )
    assert again["state_type"] == "COMPLETED", again["state"]["message"]
    delta = DeltaTable(str(lake / "places_latest")).to_pyarrow_table()
    assert delta.num_rows == places and delta.column("poi_name").null_count == 0
    assert DeltaTable(str(lake / "crosswalk")).to_pyarrow_table().num_rows == 2 * FODORS_ROWS


def test_a_password_in_export_to_is_refused_and_not_stored(
    server: PrefectServer, pg: PgServer, tmp_path: Path
) -> None:
    """Given a password in export_to, the server refuses to create the flow run (the schema);
    created all the same (enforcement off for the run), the flow run fails before anything is
    done (no warehouse, nothing in PostgreSQL), saying where the password goes; either way the
    password is in none of the flow run's parameters and nowhere in Prefect's database."""
    db = tmp_path / "wh.duckdb"
    pg.psql("create database refused")
    pg = dataclasses.replace(pg, database="refused")
    leaky = pg.url().replace(f"{pg.user}@", f"{pg.user}:{PASSWORD}@")
    params = {"inputs": [str(FODORS)], "db": str(db), "export_to": leaky}
    refused = subprocess.run(
        [sys.executable, "-m", "prefect", "deployment", "run", FILE_RUN,
         "--params", json.dumps(params)],
        env=server.env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "Validation failed for field 'export_to'" in refused.stdout + refused.stderr
    deployment = server.api("GET", f"/deployments/name/{FILE_RUN}")
    runs = server.flow_runs(deployment["id"])
    assert not [r for r in runs if r["parameters"].get("export_to", "") == leaky]

    created = server.api(
        "POST",
        f"/deployments/{deployment['id']}/create_flow_run",
        {"parameters": params, "enforce_parameter_schema": False},
    )
    run = ended(server, created["id"])
    assert run["state_type"] == "FAILED"
    message = run["state"]["message"]
    assert "PGPASSWORD" in message and "pg_password_block" in message
    assert not db.exists()
    assert pg.psql("select count(*) from pg_tables where schemaname = 'public'").strip() == "0"

    assert run["parameters"]["export_to"] == pg.url()
    every_run = server.api("POST", "/flow_runs/filter", {"limit": 200})
    assert PASSWORD not in json.dumps(every_run)
    logs = server.api("POST", "/logs/filter", {"limit": 200})
    assert PASSWORD not in json.dumps(logs)
    assert not [v for v in stored_text(server.home) if PASSWORD in v]
