"""Resume on the embedded sandbox (issue 48): its state is kept beside the warehouse, so a run
stopped part way is finished by a resume that re-attaches to its jobs, with the usage
continuous and nothing billed twice; and where a sandbox's state was lost, a resume holds the
jobs it does not know and --resend-uncertain finishes the run, never taking a job id the
warehouse holds for other places."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.emulator.keep import SandboxStore
from placeflow.events import ChunkSubmitted, Event, FileVerified, RowsLoaded
from placeflow.options import RunOptions
from placeflow.runner.target import Target, open_target, sandbox_folder
from placeflow.state.checks import run_checks
from placeflow.state.runstate import RunState
from tests.sandbox_target import sandbox_target
from tests.test_run import write_places

POSTS = "POST /v1/jobs/enrich"
OPTIONS = RunOptions(route="job", chunk_rows=10, dedupe="exact")
KEY = "sk_sandbox_resume_key_0048"


class Crash(BaseException):
    """The process going at an instant of the run (nothing of placeflow catches it)."""


def crash_when(
    chunks_loaded: int, kind: type[RowsLoaded | FileVerified | ChunkSubmitted] = RowsLoaded
) -> Callable[[Event], None]:
    """An event hook that stops the run once `chunks_loaded` chunks are in the warehouse (with
    `kind` FileVerified: once that many chunks' files are fetched and verified, not loaded;
    ChunkSubmitted on the synchronous route: once that many batches are answered, their files
    recorded and not loaded)."""
    loaded: list[int] = []

    def hook(event: Event) -> None:
        if isinstance(event, kind):
            loaded.append(event.chunk_no)
            if len(loaded) == chunks_loaded:
                raise Crash

    return hook


def kept_stats(db: Path) -> dict[str, Any]:
    """What the sandbox kept beside `db` observed, read by a sandbox started on its state."""
    store = SandboxStore(sandbox_folder(db))
    assert store.acquire()
    try:
        sandbox = Sandbox(store=store)
        assert sandbox.restored
        return sandbox.stats()
    finally:
        store.release()


def test_a_run_stopped_on_the_embedded_sandbox_is_finished_by_a_resume(tmp_path: Path) -> None:
    """Stopped after its first job loaded, the run is resumed by another embedded sandbox kept
    beside the warehouse: it re-attaches to the jobs already submitted (no new POST), completes,
    its usage delta equals what it charged, and the kept ledger shows no row billed twice."""
    db, csv_path = tmp_path / "wh.duckdb", write_places(tmp_path / "p.csv", 40)
    with open_target(api_key=None, base_url=None, db=db) as target:
        assert target.label == f"embedded sandbox kept in {sandbox_folder(db)}"
        with pytest.raises(Crash):
            placeflow.run([str(csv_path)], options=OPTIONS, db=db, target=target,
                          on_event=crash_when(1))  # fmt: skip
    with duckdb.connect(str(db), read_only=True) as con:
        (run_id,) = con.execute("select run_id from runs").fetchone() or ("",)
    posted = kept_stats(db)["requests"][POSTS]["200"]
    with open_target(api_key=None, base_url=None, db=db) as target:
        done = placeflow.resume(run_id, db=db, target=target)
    assert done.status == "completed", done.message
    assert done.usage_delta == done.charged == 40 and done.ledger_vs_usage == 0
    stats = kept_stats(db)
    assert posted >= 1 and stats["requests"][POSTS]["200"] == 4  # none posted twice
    billed = stats["keys"]["sk_sandbox_paid_0000000000000000"]["billed"]
    assert billed["rows"] == 40 and billed["rows_billed_twice"] == 0
    with duckdb.connect(str(db), read_only=True) as con:
        assert all(n == 0 for n in run_checks(con).values()), run_checks(con)


def _target(base_url: str) -> Target:
    """The sandbox at `base_url`, labelled by it (two sandboxes, two services)."""
    target = sandbox_target(base_url, KEY)
    return replace(target, label=f"sandbox at {base_url}", sleep=lambda seconds: None)


def test_a_sandbox_whose_state_was_lost_holds_then_resends_without_a_dead_end(
    tmp_path: Path,
) -> None:
    """A run stopped on one sandbox, resumed on a new one that never saw its jobs: the resume
    holds them (unknown to the service) and says so; --resend-uncertain sends them as new jobs
    and the run completes, with no move the lifecycle refuses (a new sandbox's first job id
    is not the loaded chunk's), and no adjustment booked from a usage of another service."""
    db, csv_path = tmp_path / "wh.duckdb", write_places(tmp_path / "p.csv", 30)
    config = SandboxConfig(keys=(KeySpec(key=KEY),))
    first = Sandbox(config)
    with first.serve() as srv, pytest.raises(Crash):  # its first file fetched, not yet loaded
        placeflow.run([str(csv_path)], options=OPTIONS, db=db, target=_target(srv.base_url),
                      on_event=crash_when(1, FileVerified))  # fmt: skip
    with duckdb.connect(str(db), read_only=True) as con:
        (run_id,) = con.execute("select run_id from runs").fetchone() or ("",)
    second = Sandbox(config)
    with second.serve() as srv:
        held = placeflow.resume(run_id, db=db, target=_target(srv.base_url))
        assert held.status == "interrupted"
        assert "unknown to the service" in (held.message or "")
        done = placeflow.resume(run_id, db=db, target=_target(srv.base_url),
                                resend_uncertain=True)  # fmt: skip
    assert done.status == "completed", done.message
    assert "is resumed on sandbox at" in (held.message or "") or done.usage_delta is None
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = con.execute("select distinct kind from credit_ledger order by 1").fetchall()
        assert ("adjustment",) not in kinds, kinds
        ids = con.execute("select batch_id from jobs order by chunk_no").fetchall()
        assert len({i for (i,) in ids}) == 3
        loaded = con.execute("select count(*) from enrichments").fetchone()
        assert loaded == (30,)


def test_a_job_id_the_warehouse_holds_for_other_places_is_not_taken(tmp_path: Path) -> None:
    """A service that answers a POST with a batch_id the warehouse already holds for another
    run's places (as every fresh sandbox did, its ids drawn alike): the chunk is held as
    uncertain, that id is not recorded for it, and the other run's chunk is left as it was."""
    db = tmp_path / "wh.duckdb"
    config = SandboxConfig(keys=(KeySpec(key=KEY),))
    first = Sandbox(config)
    with first.serve() as srv:
        one = placeflow.run([str(write_places(tmp_path / "a.csv", 10))], options=OPTIONS,
                            db=db, target=_target(srv.base_url))  # fmt: skip
    assert one.status == "completed"
    second = Sandbox(config)
    second.backend._instance = first.backend._instance  # draws its ids as the first did
    other = tmp_path / "b.csv"
    other.write_text("id,name,address,city,country\nb1,Other Shop,1 Oak Road,Shelbyville,USA\n")
    with second.serve() as srv:
        two = placeflow.run([str(other)], options=OPTIONS, db=db, target=_target(srv.base_url))
    assert two.status == "interrupted"
    assert "already holds for other places" in (two.message or "")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select run_id, status, batch_id, error_code from jobs order by created_at"
        ).fetchall()
    (_, done, taken, _), (_, status, batch_id, code) = rows
    assert done == "loaded" and batch_id is None and code == "UNCERTAIN" and status == "planned"
    assert second.stats()["requests"][POSTS] == {"200": 1}
    assert taken is not None


def test_a_sync_route_resume_sends_only_what_is_left_and_shows_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A synchronous-route run stopped after two of its six batches were answered (their files
    recorded, not yet loaded: answers are loaded in batches): the resume loads them from disk
    and sends the four left, one request each (the sandbox's own counts), and `runs` shows the
    run running while the resume carries it out, completed after."""
    db, csv_path = tmp_path / "wh.duckdb", write_places(tmp_path / "p.csv", 60)
    options = RunOptions(route="sync", dedupe="exact")
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),)))
    with sandbox.serve() as srv:
        target = _target(srv.base_url)
        with pytest.raises(Crash):
            placeflow.run([str(csv_path)], options=options, db=db, target=target,
                          on_event=crash_when(2, ChunkSubmitted))  # fmt: skip
        before = sandbox.stats()["requests"]
        with duckdb.connect(str(db), read_only=True) as con:
            (run_id, status) = con.execute("select run_id, status from runs").fetchone() or ()
            assert con.execute("select count(*) from enrichments").fetchone() == (0,)
        assert status == "interrupted"
        seen: list[str] = []
        take_over = RunState.take_over

        def taken_over(state: RunState, service: str | None = None) -> str | None:
            said = take_over(state, service)
            found = state.con.execute("select status from runs where run_id = ?", [run_id])
            seen.append(str(found.fetchall()[0][0]))
            return said

        monkeypatch.setattr(RunState, "take_over", taken_over)
        done = placeflow.resume(run_id, db=db, target=target)
        after = sandbox.stats()["requests"]
    assert before["POST /v1/enrich-batch"] == {"200": 2}
    assert after["POST /v1/enrich-batch"] == {"200": 6}  # the four left, one request each
    others = sum(sum(c.values()) for r, c in after.items() if r != "POST /v1/enrich-batch")
    others -= sum(sum(c.values()) for r, c in before.items() if r != "POST /v1/enrich-batch")
    assert others <= 3  # the balance, the budget check and the usage after: no more
    assert seen == ["running"] and done.status == "completed", done.message
    assert done.usage_delta == done.charged and done.ledger_vs_usage == 0
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from runs").fetchall() == [("completed",)]
        assert con.execute("select count(*) from enrichments").fetchone() == (60,)


def test_a_folder_that_cannot_be_written_keeps_nothing(tmp_path: Path) -> None:
    """A warehouse in a place the sandbox cannot write its folder in (read-only) still gets a
    sandbox, one that keeps nothing and says so in its label."""
    blocked = tmp_path / "wh.duckdb.sandbox"
    blocked.write_text("a file where the folder would be")
    with open_target(api_key=None, base_url=None, db=tmp_path / "wh.duckdb") as target:
        assert target.label.endswith("cannot be written)") and "state not kept" in target.label
