"""The live progress display of `placeflow run`, as a terminal receives it: drawn under a
pseudo-terminal, advancing with the run's real counts; absent (no ESC byte at all) under
--json, through pipes and under CI, where stdout carries exactly one JSON document."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from .conftest import KEY, Served, ServeSandbox

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(str(p) for p in (ROOT / "data" / "samples").glob("*.csv"))
ANSI = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
LIMIT = 240.0  # seconds: a bound on a stuck child, never a timing assert


def command(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "placeflow.cli", "run", *SAMPLES, "--db", str(db),
            "--route", "job", "--chunk-rows", "300", "--force", *extra]  # fmt: skip


def environment(base_url: str, prefect_api: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_") and k != "CI"}
    env.update(
        PLACEFLOW_API_KEY=KEY,
        PLACEFLOW_BASE_URL=base_url,
        PREFECT_API_URL=prefect_api,
        TERM="xterm-256color",
        **extra,
    )
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


def read_to_eof(fds: list[int]) -> dict[int, bytes]:
    """Everything written to these descriptors until each reaches EOF (bounded by LIMIT)."""
    got = {fd: b"" for fd in fds}
    open_fds, deadline = list(fds), time.monotonic() + LIMIT
    while open_fds:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no EOF after {LIMIT} s: {got}"
        ready, _, _ = select.select(open_fds, [], [], remaining)
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # a pty's master reads EIO once the child's side is closed
                chunk = b""
            if chunk:
                got[fd] += chunk
            else:
                open_fds.remove(fd)
    return got


def run_in_terminal(cmd: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run `cmd` with stdout and stderr on one pseudo-terminal of 140x50; what it received."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
    with subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
        start_new_session=True,
    ) as child:  # fmt: skip
        os.close(slave)
        try:
            out = read_to_eof([master])[master]
        finally:
            os.close(master)
        code = child.wait(timeout=LIMIT)
    return code, out


def run_in_pipes(cmd: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, timeout=LIMIT)
    return done.returncode, done.stdout, done.stderr


def counts(text: str, label: str) -> list[int]:
    """Every value the display showed on its `label` line, frame after frame."""
    return [int(v.replace(",", "")) for v in re.findall(rf"^{label} +([\d,]+)", text, re.M)]


def loaded_rows(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(
            "select count(*) from run_places where run_id = (select max(run_id) from runs)"
        ).fetchone()
    assert found is not None
    return int(found[0])


@pytest.fixture
def setup(serve_sandbox: ServeSandbox, prefect_api: str) -> tuple[Served, dict[str, str]]:
    served = serve_sandbox()
    return served, environment(served.base_url, prefect_api)


def test_display_advances_through_the_stages_on_a_terminal(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """Under a pty the display draws read, planned, submitted, processed and loaded with
    counts that only grow, ends on the sandbox's own figures, then prints the summary."""
    sb = serve_sandbox()
    db = tmp_path / "tty.duckdb"
    code, out = run_in_terminal(command(db), environment(sb.base_url, prefect_api))
    text = ANSI.sub(b"", out).replace(b"\r", b"").decode("utf-8", "replace")
    assert code == 0, text[-3000:]
    assert b"\x1b[" in out  # it was drawn, with the terminal's controls
    assert "Traceback" not in text
    jobs = sb.requests("POST /v1/jobs/enrich")
    assert jobs == 3  # 864 rows, 300 places per job
    for label in ("read", "planned", "submitted", "processed", "loaded"):
        seen = counts(text, label)
        assert seen == sorted(seen), (label, seen)  # never goes back
        assert seen[0] == 0 and seen[-1] > 0, (label, seen)
    planned = counts(text, "planned")[-1]
    assert counts(text, "submitted")[-1] == jobs
    assert counts(text, "processed")[-1] == planned
    assert counts(text, "loaded")[-1] == planned == loaded_rows(db)
    assert len(set(counts(text, "loaded"))) >= 4  # 0, then one step per job's file
    charged = re.findall(r"^credits +[\d,]+ held +([\d,]+) charged", text, re.M)
    assert int(charged[-1].replace(",", "")) == sb.credits()["charged"]
    last_frame = text.rindex("\nloaded ")
    assert re.search(r"^run \S+: completed", text[last_frame:], re.M)  # then the summary


def test_json_through_pipes_is_one_document_without_control_characters(
    tmp_path: Path, setup: tuple[Served, dict[str, str]]
) -> None:
    """`--json` through pipes: stdout is exactly one JSON document; no ESC on either stream."""
    _, env = setup
    code, out, err = run_in_pipes(command(tmp_path / "json.duckdb", "--json"), env)
    assert code == 0, err[-3000:]
    assert b"\x1b" not in out and b"\x1b" not in err
    summary = json.loads(out)  # the whole of stdout: one document
    assert summary["status"] == "completed" and summary["chunks"] == 3


@pytest.mark.parametrize("how", ["CI=true", "--quiet"])
def test_ci_and_quiet_draw_nothing_even_on_a_terminal(
    how: str, tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """With CI set, or with --quiet, a terminal receives the summary and no control bytes."""
    sb = serve_sandbox()
    ci = {"CI": "true"} if how.startswith("CI") else {}
    env = environment(sb.base_url, prefect_api, **ci)
    flags = () if ci else (how,)
    code, out = run_in_terminal(command(tmp_path / "ci.duckdb", *flags), env)
    assert code == 0, out[-3000:]
    assert b"\x1b" not in out and b"processed" not in out
    assert b"completed" in out


def test_flow_passes_a_live_callback_and_keeps_a_progress_artifact(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """In process, the flow hands its caller's callback every event (Prefect stores only a
    placeholder for it) and leaves a progress artifact of the flow run at 100 %."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.client.schemas.objects import State
    from prefect.client.schemas.sorting import ArtifactSort

    from placeflow.events import Event, RowsLoaded
    from placeflow.flows.run import run_files
    from placeflow.options import RunOptions

    sb = serve_sandbox()
    seen: list[Event] = []
    options = RunOptions(route="job", chunk_rows=300, force=True)
    state: State[Any] = run_files(  # type: ignore[assignment]  # sync call: a State
        inputs=SAMPLES, options=options, db=str(tmp_path / "a.duckdb"), on_event=seen.append,
        return_state=True,
    )  # fmt: skip
    assert state.is_completed()
    loaded = [e for e in seen if isinstance(e, RowsLoaded)]
    assert len(loaded) == sb.requests("POST /v1/jobs/enrich") == 3
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    with get_client(sync_client=True) as client:
        stored = client.read_flow_run(flow_run_id).parameters["on_event"]
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])),
            limit=50,
            offset=0,
            sort=ArtifactSort.CREATED_DESC,
        )
    assert isinstance(stored, str) and stored.startswith("<")
    progress = [a for a in found if a.type == "progress"]
    assert len(progress) == 1 and progress[0].data == 100.0
