"""A research run carried out by a live process (on this host or another) is not resumed by a
second invocation of the same command: it is refused with `RunInProgress` and nothing is sent,
as `placeflow resume` refuses a run's (`placeflow.state.owners.not_carried`); once its owner is
gone, the same command carries the run on. Checked on what the sandbox itself was sent."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from placeflow.cli.research import main
from placeflow.errors import RunInProgress
from placeflow.runner.research import ResearchOptions
from placeflow.state.owners import this_host

from .conftest import FIELDS, KEY, SCALE, ServeSandbox, places, spec, write_csv


def _owned_by(db: Path, run_id: str, host: str, pid: int, beat: datetime) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute(
            "update runs set owner_host = ?, owner_pid = ?, heartbeat_at = ? where run_id = ?",
            [host, pid, beat, run_id],
        )


def test_a_research_run_carried_by_a_live_owner_is_not_resumed(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Stopped part way (credits ran out), then owned by a live process (the test's parent on
    this host, or a fresh heartbeat from another host): the same command raises RunInProgress
    and the sandbox gets no research request; once the owner is gone (its heartbeat older than
    the lease), the same command resumes the same run and finishes it."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"

    first, first_code = sb.run(csv, db, ResearchOptions(spec=spec()), hook=sb.starved_after(1))
    assert first_code == 3 and first.status == "interrupted", first
    sb.sandbox.backend.set_available(KEY, 10_000)
    sent = sb.requests("POST /v1/deep-research")
    now = datetime.now(UTC)
    for host, pid in ((this_host(), os.getppid()), ("elsewhere", 1)):
        _owned_by(db, first.run_id, host, pid, now)
        with pytest.raises(RunInProgress) as refused:
            sb.run(csv, db, ResearchOptions(spec=spec()))
        assert refused.value.run_id == first.run_id
        assert sb.requests("POST /v1/deep-research") == sent  # nothing sent by the second
    _owned_by(db, first.run_id, "elsewhere", 1, now - timedelta(hours=1))  # gone
    second, second_code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert second_code == 0 and second.run_id == first.run_id, second
    assert sb.research()["billed_twice"] == [] and sb.research()["billed_places"] == 20


def test_the_command_names_the_run_another_process_carries_out(
    tmp_path: Path,
    serve: ServeSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`placeflow research --json` on a research run a live process carries out: exit 1, one
    error document naming that run (its `run_id`), and nothing sent to research."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    first, first_code = sb.run(csv, db, ResearchOptions(spec=spec()), hook=sb.starved_after(1))
    assert first_code == 3 and first.status == "interrupted", first
    sb.sandbox.backend.set_available(KEY, 10_000)
    _owned_by(db, first.run_id, this_host(), os.getppid(), datetime.now(UTC))
    monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
    monkeypatch.setenv("PLACEFLOW_BASE_URL", sb.base_url)
    monkeypatch.setenv("PLACEFLOW_RATE_LIMITS", f"10/{SCALE:g}s,100/{60 * SCALE:g}s")
    sent = sb.requests("POST /v1/deep-research")
    capsys.readouterr()
    argv = ["research", str(csv), *(a for f in FIELDS for a in ("--field", f)),
            "--verify-identity", "--db", str(db), "--json"]  # fmt: skip
    assert main(argv) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "error" and doc["exit_code"] == 1, doc
    assert doc["run_id"] == first.run_id and "being carried out" in doc["message"]
    assert sb.requests("POST /v1/deep-research") == sent
