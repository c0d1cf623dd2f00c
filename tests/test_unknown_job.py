"""A job the service no longer knows (404 on its polls; docs/spec-readings.md, 18): its chunk is
held and never sent again unasked, the other chunks load, and asking sends it again as a new
job whose possible double charge the run declares: as the sandbox's own counts show."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.api.poller import UNKNOWN_AFTER
from placeflow.emulator import FaultConfig, Sandbox
from placeflow.events import ChunkSubmitted, Event, FileVerified
from placeflow.options import RunOptions
from placeflow.runner.target import Target
from placeflow.state.checks import run_checks
from tests.sandbox_target import served
from tests.test_run import write_places


@contextmanager
def served_sandbox(key: str, **config: Any) -> Iterator[tuple[Sandbox, Target]]:
    """The sandbox and a target whose clients back off without waiting: what is asserted is
    what the sandbox answered and counted, not how long placeflow waited in between."""
    with served(key, **config) as (sandbox, target):
        yield sandbox, replace(target, sleep=lambda seconds: None)


KEY = "sk_unknown_job_paid_key_1234"
POLLS = "GET /v1/jobs/{batch_id}"
POSTS = "POST /v1/jobs/enrich"


def test_a_forgotten_job_is_held_then_sent_again_only_when_asked(tmp_path: Path) -> None:
    """The service forgets one of three jobs: that chunk is held and the run interrupted while
    the others load; a resume looks for it again and sends nothing; --resend-uncertain sends
    it as a new job, and what the sandbox billed twice is what the run declared possible."""
    with served_sandbox(KEY) as (service, target):
        forgotten: list[str] = []

        def forget_chunk_one(event: Event) -> None:
            # The service forgets chunk 1's job as soon as it accepted it (a retention that ran
            # out, or a resume under another key): every poll of it answers 404.
            if isinstance(event, ChunkSubmitted) and event.chunk_no == 1 and event.batch_id:
                service.backend.forget_job(event.batch_id)
                forgotten.append(event.batch_id)

        csv_path = write_places(tmp_path / "p.csv", 30)
        db = tmp_path / "wh.duckdb"
        options = RunOptions(route="job", chunk_rows=10, dedupe="exact")
        first = placeflow.run(
            [str(csv_path)], options=options, db=db, target=target, on_event=forget_chunk_one
        )
        assert forgotten and first.status == "interrupted"
        assert f"job {forgotten[0]} is unknown to the service" in (first.message or "")
        stats = service.stats()
        assert stats["requests"][POSTS] == {"200": 3}
        assert stats["requests"][POLLS]["404"] == UNKNOWN_AFTER
        with duckdb.connect(str(db), read_only=True) as con:
            loaded = con.execute("select chunk_no, count(*) from enrichments group by 1 order by 1")
            assert loaded.fetchall() == [(0, 10), (2, 10)]
            held = con.execute("select status, error_code, batch_id from jobs where chunk_no = 1")
            assert held.fetchall() == [("submitted", "UNKNOWN_JOB", forgotten[0])]

        # Resumed without asking: looked for again, still unknown, nothing sent.
        again = placeflow.resume(first.run_id, db=db, target=target)
        assert again.status == "interrupted"
        stats = service.stats()
        assert stats["requests"][POSTS] == {"200": 3}
        assert stats["requests"][POLLS]["404"] == 2 * UNKNOWN_AFTER

        # Asked (--resend-uncertain): a new job under a new key; the run completes and declares
        # the chunk's rows as possibly charged twice, which is what the sandbox billed twice.
        last = placeflow.run(
            [str(csv_path)],
            options=options.model_copy(update={"resend_uncertain": True}),
            db=db,
            target=target,
        )
        assert last.run_id == first.run_id and last.status == "completed"
        stats = service.stats()
        assert stats["requests"][POSTS] == {"200": 4}
        billed = stats["keys"][KEY]["billed"]
        assert last.possible_extra_credits == 10 == billed["rows_billed_twice"]
        with duckdb.connect(str(db), read_only=True) as con:
            loaded = con.execute("select chunk_no, count(*) from enrichments group by 1 order by 1")
            assert loaded.fetchall() == [(0, 10), (1, 10), (2, 10)]
            sent = "select idempotency_key, batch_id, error_code from jobs where chunk_no = 1"
            key, batch_id, code = con.execute(sent).fetchall()[0]
            assert "-again-" in key and batch_id != forgotten[0] and code is None
            assert all(n == 0 for n in run_checks(con).values()), run_checks(con)


def test_jobs_the_service_shows_only_after_a_few_reads_are_followed_as_usual(
    tmp_path: Path,
) -> None:
    """The reading where a new job answers 404 to its first reads (`unseen_job_reads`, fewer
    than UNKNOWN_AFTER): the run waits them out and completes, nothing sent twice."""
    faults = FaultConfig(unseen_job_reads=UNKNOWN_AFTER - 1)
    with served_sandbox(KEY, faults=faults) as (sandbox, target):
        summary = placeflow.run(
            [str(write_places(tmp_path / "p.csv", 20))],
            options=RunOptions(route="job", chunk_rows=10, dedupe="exact"),
            db=tmp_path / "wh.duckdb",
            target=target,
        )
        stats = sandbox.stats()
    assert summary.status == "completed" and summary.possible_extra_credits == 0
    assert stats["requests"][POSTS] == {"200": 2}
    assert stats["requests"][POLLS]["404"] == 2 * (UNKNOWN_AFTER - 1)
    assert stats["keys"][KEY]["billed"]["rows_billed_twice"] == 0


class Crash(BaseException):
    """The process dying at an instant of the run (nothing of placeflow catches it)."""


def test_a_job_that_ended_before_a_crash_and_was_then_forgotten_is_held_then_resent(
    tmp_path: Path,
) -> None:
    """A crash after chunk 1's file was verified and before it was loaded; the file is lost
    and the service forgets the job. The resume holds that chunk (one 404, nothing sent) while
    the others load; --resend-uncertain sends it again as a new job, declared as possibly
    charged twice, which is what the sandbox billed twice."""
    with served_sandbox(KEY) as (service, target):
        seen: dict[str, str] = {}

        def crash_after_chunk_one_is_fetched(event: Event) -> None:
            if isinstance(event, ChunkSubmitted) and event.batch_id:
                seen[str(event.chunk_no)] = event.batch_id
            if isinstance(event, FileVerified) and event.chunk_no == 1:
                seen["file"] = event.path
                raise Crash

        csv_path = write_places(tmp_path / "p.csv", 30)
        db = tmp_path / "wh.duckdb"
        options = RunOptions(route="job", chunk_rows=10, dedupe="exact")
        with pytest.raises(Crash):
            placeflow.run(
                [str(csv_path)], options=options, db=db, target=target,
                on_event=crash_after_chunk_one_is_fetched,
            )  # fmt: skip
        Path(seen["file"]).unlink()
        service.backend.forget_job(seen["1"])
        with duckdb.connect(str(db)) as con:
            (run_id,) = con.execute("select run_id from runs").fetchall()[0]

        again = placeflow.resume(run_id, db=db, target=target)
        assert again.status == "interrupted"
        assert f"job {seen['1']} is unknown to the service" in (again.message or "")
        stats = service.stats()
        assert stats["requests"][POLLS]["404"] == 1 and stats["requests"][POSTS] == {"200": 3}
        with duckdb.connect(str(db), read_only=True) as con:
            held = con.execute("select status, error_code from jobs where chunk_no = 1")
            assert held.fetchall() == [("completed", "UNKNOWN_JOB")]

        last = placeflow.resume(run_id, db=db, target=target, resend_uncertain=True)
        assert last.status == "completed"
        stats = service.stats()
        assert stats["requests"][POSTS] == {"200": 4}
        assert (
            last.possible_extra_credits == 10 == stats["keys"][KEY]["billed"]["rows_billed_twice"]
        )
        with duckdb.connect(str(db), read_only=True) as con:
            loaded = con.execute("select chunk_no, count(*) from enrichments group by 1 order by 1")
            assert loaded.fetchall() == [(0, 10), (1, 10), (2, 10)]
            assert all(n == 0 for n in run_checks(con).values()), run_checks(con)
