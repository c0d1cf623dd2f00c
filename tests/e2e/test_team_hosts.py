"""A team on two "hosts" (docs/operations.md, "A team on several machines"): a Prefect server and
a worker of the file-run deployment stand for the warehouse host (PLACEFLOW_HOME, the key, the
object storage's variables); a second host, a process with a host name and a temp folder of its
own that shares only the Prefect API and the object storage (moto's S3 server on loopback),
submits a run through the deployment with `placeflow run s3://... --deployment file-run` and
reads the export back from object storage."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from tests.s3server import S3Server
from tests.s3server import start as start_s3

from .prefect_server import PrefectServer, prefect_server

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
KEY = "sk_team_hosts_key_5e5e"
FILE_RUN = "run_files/file-run"
PLACES = 30
OTHER_HOST = "analyst-laptop"


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The warehouse host (server, deployment, worker) and the object storage, running."""
    home = tmp_path_factory.mktemp("warehouse-host")
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY, credits=1_000_000),)))
    with start_s3() as s3, sandbox.serve() as served, prefect_server(home / "prefect") as srv:
        bucket = s3.new_bucket()
        srv.env.update(s3.env)
        srv.env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=served.base_url,
                       PLACEFLOW_HOME=str(home))  # fmt: skip
        srv.prefect("work-pool", "create", "placeflow", "--type", "process")
        srv.prefect("--no-prompt", "deploy", "--name", "file-run", cwd=REPO)
        deployment = srv.api("GET", f"/deployments/name/{FILE_RUN}")
        params = {**deployment["parameters"], "export_to": f"s3://{bucket}/lake"}
        srv.api("PATCH", f"/deployments/{deployment['id']}", {"parameters": params})
        srv.start(
            "worker",
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", "placeflow",
             "--type", "process", "--limit", "1"],
            cwd=REPO,
        )  # fmt: skip
        yield {"server": srv, "s3": s3, "bucket": bucket, "home": home, "sandbox": sandbox}


def second_host(argv: list[str]) -> list[str]:
    """`argv` run as a process whose host name is OTHER_HOST (a UTS namespace where it can be
    had, else the name given to the process)."""
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True, check=False)
    if probe.returncode == 0:
        return ["unshare", "--uts", "sh", "-c", f'hostname {OTHER_HOST} && exec "$@"', "sh",
                *argv]  # fmt: skip
    code = (
        f"import socket, sys, runpy; socket.gethostname = lambda: {OTHER_HOST!r}; a = sys.argv[1:];"
        " sys.argv = a[1:] if a[0] == '-m' else a;"
        " runpy.run_module(a[1], run_name='__main__', alter_sys=True) if a[0] == '-m'"
        " else runpy.run_path(a[0], run_name='__main__')"
    )
    return [sys.executable, "-c", code, *argv[1:]]


def upload(s3: S3Server, key: str, n: int) -> None:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["id", "name", "address", "city", "country"])
    for i in range(n):
        writer.writerow([f"t{i}", f"Team Shop {i}", f"{i} Oak Street", "Shelbyville", "USA"])
    with s3.storage.filesystem("s3").open_output_stream(key) as out:
        out.write(text.getvalue().encode())


READ_BACK = """
import json, sys
import pyarrow.fs as pafs, pyarrow.parquet as pq
from placeflow.config import storage_settings
fs = storage_settings().filesystem("s3")
root = sys.argv[1]
manifest = json.loads(fs.open_input_stream(f"{root}/_placeflow_manifest.json").read())
files = manifest["tables"]["places_latest"]["files"]
rows = sum(pq.read_table(f"{root}/{f['path']}", filesystem=fs).num_rows for f in files)
print(json.dumps({"rows": rows, "tables": sorted(manifest["tables"])}))
"""


def test_a_second_host_submits_through_the_deployment_and_reads_the_export(
    team: dict[str, Any], tmp_path: Path
) -> None:
    """The second host (its own host name and folder, only PREFECT_API_URL and AWS_* set)
    submits an s3:// input; the worker writes the one warehouse under PLACEFLOW_HOME and exports
    to S3; the submitter prints the completed run's summary (exit 0) and reads every place back
    from the export; the sandbox billed each place once; nothing was written on the second host
    but its own files."""
    srv: PrefectServer = team["server"]
    s3: S3Server = team["s3"]
    bucket = team["bucket"]
    upload(s3, f"{bucket}/inputs/shops.csv", PLACES)
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(laptop), "PREFECT_HOME": str(laptop / ".p"),
           "PREFECT_API_URL": srv.api_url, "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           **s3.env}  # fmt: skip
    cli = [sys.executable, "-m", "placeflow.cli", "run", f"s3://{bucket}/inputs/shops.csv",
           "--deployment", "file-run", "--mode", "enrich", "--json"]  # fmt: skip
    done = subprocess.run(second_host(cli), env=env, cwd=laptop,
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert (summary["status"], summary["submitted"], summary["exit_code"]) == (
        "completed", PLACES, 0
    )  # fmt: skip
    assert (team["home"] / "data" / "placeflow.duckdb").is_file()  # the one warehouse
    assert not list(laptop.rglob("*.duckdb"))

    script = laptop / "read_back.py"
    script.write_text(READ_BACK)
    back = subprocess.run(
        second_host([sys.executable, str(script), f"{bucket}/lake"]),
        env=env, cwd=laptop, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert back.returncode == 0, back.stderr[-3000:]
    read = json.loads(back.stdout.strip().splitlines()[-1])
    assert read["rows"] == PLACES and "places_latest" in read["tables"]
    account = team["sandbox"].backend.keys[KEY].account
    assert account.rows_billed_twice() == [] and sum(account.rows_billed.values()) == PLACES


def test_no_wait_returns_the_flow_runs_id_at_once(team: dict[str, Any], tmp_path: Path) -> None:
    """`--no-wait` prints the flow run's id (exit 0) as soon as it is created; that flow run,
    the same input again, completes on the worker buying nothing (every place fresh)."""
    from .prefect_server import wait_for

    srv: PrefectServer = team["server"]
    s3: S3Server = team["s3"]
    bucket = team["bucket"]
    upload(s3, f"{bucket}/inputs/again.csv", PLACES)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path),
           "PREFECT_API_URL": srv.api_url, **s3.env}  # fmt: skip
    cli = [sys.executable, "-m", "placeflow.cli", "run", f"s3://{bucket}/inputs/again.csv",
           "--deployment", "file-run", "--no-wait", "--json"]  # fmt: skip
    done = subprocess.run(second_host(cli), env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert (said["status"], said["exit_code"]) == ("submitted", 0)

    def ended() -> dict[str, Any] | None:
        run: dict[str, Any] = srv.api("GET", f"/flow_runs/{said['flow_run_id']}")
        return run if run["state_type"] in {"COMPLETED", "FAILED", "CRASHED"} else None

    run = wait_for(ended, timeout=600, every=2, what="the submitted flow run")
    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    account = team["sandbox"].backend.keys[KEY].account
    assert sum(account.rows_billed.values()) == PLACES  # the first test's, none more
