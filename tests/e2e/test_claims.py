"""One place, one purchase, whoever runs: a run, a refresh started while it is in flight and an
overlapping second run, on one warehouse and one key, against the sandbox over loopback. What
is asserted is what the sandbox itself billed: no place twice."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import ManualClock
from placeflow.events import Event, JobProgress, Note
from placeflow.fields import RateLimits
from placeflow.options import RunOptions
from placeflow.runner.refresh import refresh
from placeflow.runner.target import Target
from placeflow.state.checks import run_checks
from placeflow.support.redact import Secret

from .conftest import KEY, ServeSandbox, places, write_csv
from .virtual_rig import KEY as KEY_VIRTUAL
from .virtual_rig import rig, write_places

__all__ = ["rig"]  # the fixture


def loopback(base_url: str) -> Target:
    """The served sandbox as a run's target, its one key paid."""
    return Target(
        base_url=base_url, api_key=Secret(KEY), label="sandbox", limits=RateLimits.for_tier("paid")
    )


class Running:
    """`work()` in a thread; its result or error kept; `polled` set at its first job poll,
    `waiting` when it waits for places another run is buying."""

    def __init__(self, work: Callable[[Callable[[Event], None]], Any]) -> None:
        self.polled = threading.Event()
        self.waiting = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

        def on_event(event: Event) -> None:
            if isinstance(event, JobProgress):
                self.polled.set()
            if isinstance(event, Note) and event.message.startswith("waiting up to"):
                self.waiting.set()

        def main() -> None:
            try:
                self.result = work(on_event)
            except BaseException as exc:  # handed to the test's thread
                self.error = exc
                self.polled.set()
                self.waiting.set()

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()

    def done(self, timeout: float = 180) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the run did not end"
        if self.error is not None:
            raise self.error
        return self.result


def test_a_refresh_and_an_overlapping_run_during_a_run_buy_nothing_twice(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Run A's job cannot end (the sandbox's clock stands still); a refresh of every place then
    buys none of A's (they are in flight) and ends at once; run B, half of whose places are
    A's, buys only its own and takes A's answers for the rest once A loads them. The sandbox
    billed every place exactly once; every row of every run is accounted; the checks pass."""
    clock = ManualClock()
    served = serve_sandbox(clock=clock, rows_per_second=1000.0)
    target = loopback(served.base_url)
    db = tmp_path / "wh.duckdb"
    a_csv = write_csv(tmp_path / "a.csv", places(40))
    b_csv = write_csv(tmp_path / "b.csv", places(30, start=25))  # 15 of A's, 15 new
    job = RunOptions(route="job")

    a = Running(lambda ev: placeflow.run([str(a_csv)], db=db, target=target, options=job,
                                         on_event=ev))  # fmt: skip
    assert a.polled.wait(120), a.error
    refreshed = refresh(db=db, older_than="0", target=target, options=RunOptions(claim_wait=0))
    b = Running(lambda ev: placeflow.run([str(b_csv)], db=db, target=target,
                                         options=job.model_copy(update={"claim_wait": 120}),
                                         on_event=ev))  # fmt: skip
    assert b.polled.wait(120), b.error
    assert a.thread.is_alive()  # nothing could end while the sandbox's clock stood still
    clock.advance(3600)
    first, second = a.done(), b.done()

    account = served.sandbox.backend.keys[KEY].account
    assert account.rows_billed_twice() == []
    assert sum(account.rows_billed.values()) == 55  # A's 40 and B's 15 new places, once each
    assert refreshed.status == "completed" and refreshed.submitted == 0
    assert refreshed.stages["read"].warnings[0].startswith("40 stale place(s) are being bought")
    assert (first.status, first.submitted, first.succeeded) == ("completed", 40, 40)
    assert (second.status, second.submitted, second.claimed) == ("completed", 15, 15)
    assert second.claims_answered == 15 and second.claims_left == {}
    with duckdb.connect(str(db), read_only=True) as con:
        answered = con.execute(
            "select disposition, count(*), count(outcome_run_id) filter (success)"
            " from run_row_outcomes where run_id = ? group by 1 order by 1",
            [second.run_id],
        ).fetchall()
        owners = con.execute(
            "select distinct claimed_by from run_rows where run_id = ? and claimed_by is not null",
            [second.run_id],
        ).fetchall()
        checks = run_checks(con)
    assert answered == [("claimed", 15, 15), ("submitted", 15, 15)]
    assert owners == [(first.run_id,)]
    assert checks == dict.fromkeys(checks, 0)


def test_a_run_of_the_same_command_in_flight_is_not_resumed_by_a_second_process(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """The same command started again while the first is carried out: a new run that buys
    nothing and takes the first one's answers; the sandbox billed each place once."""
    clock = ManualClock()
    served = serve_sandbox(clock=clock, rows_per_second=1000.0)
    target = loopback(served.base_url)
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "p.csv", places(12))
    job = RunOptions(route="job")
    a = Running(lambda ev: placeflow.run([str(csv)], db=db, target=target, options=job,
                                         on_event=ev))  # fmt: skip
    assert a.polled.wait(120), a.error
    b = Running(lambda ev: placeflow.run([str(csv)], db=db, target=target, options=job,
                                         on_event=ev))  # fmt: skip
    assert b.waiting.wait(120), b.error  # it bought nothing: every place is the first run's
    clock.advance(3600)
    first, second = a.done(), b.done()
    assert first.run_id != second.run_id
    assert (second.submitted, second.claimed, second.claims_answered) == (0, 12, 12)
    assert served.sandbox.backend.keys[KEY].account.rows_billed_twice() == []
    assert served.requests("POST /v1/jobs/enrich") == 1


def test_a_refresh_whose_earlier_refresh_holds_a_chunk_refreshes_the_other_stale_places(
    rig: Any, tmp_path: Path
) -> None:
    """A refresh's job shows a file that can never be verified (the sandbox refuses it), so its
    chunk is held. The next refresh of the same terms tries that chunk again (still held),
    then re-checks the other stale places as a new run instead of stopping there: it ends
    completed, names the held refresh, and the sandbox billed each place at most once more
    than the seeding run did."""
    r = rig(rows_per_second=50.0, fail_rate=0.0)
    csv, db = write_places(tmp_path / "p.csv", 60), tmp_path / "wh.duckdb"
    seeded = placeflow.run([str(csv)], options=RunOptions(mode="validate", attributes=()),
                           db=db, target=r.target, clock=r.now)  # fmt: skip
    assert seeded.status == "completed"
    r.clock.advance(40 * 86400)
    r.sandbox.inject("JOB", "refuse_file")

    def refresh_20() -> Any:
        return refresh(db=db, older_than="30d", target=r.target, mode="validate", limit=20,
                       clock=r.now)  # fmt: skip

    held = refresh_20()
    assert held.status == "interrupted" and held.submitted == 20
    again = refresh_20()
    assert again.run_id != held.run_id
    assert (again.status, again.submitted, again.succeeded) == ("completed", 20, 20)
    assert again.message is not None and f"earlier refresh {held.run_id}" in again.message
    billed = r.sandbox.backend.keys[KEY_VIRTUAL].account.rows_billed
    assert max(billed.values()) == 2 and sum(billed.values()) == 60 + 20 + 20  # once per re-check
    assert r.billed_credits() == 60 + 20 + 20
    with duckdb.connect(str(db), read_only=True) as con:
        statuses = con.execute("select run_id, status from runs order by created_at").fetchall()
    assert statuses == [
        (seeded.run_id, "completed"),
        (held.run_id, "interrupted"),
        (again.run_id, "completed"),
    ]


@pytest.mark.slow  # a Prefect server for the session: a minute on 2 cores
@pytest.mark.usefixtures("prefect_api")
def test_the_scheduled_refresh_flow_during_a_run_buys_nothing_twice(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """The refresh deployment's flow (`refresh_stale_places`, under a Prefect server) started
    while an analyst's run is in flight leaves the run's places to it: it submits nothing, and
    the sandbox billed each place once."""
    from placeflow.flows.refresh import refresh_stale_places

    clock = ManualClock()
    served = serve_sandbox(clock=clock, rows_per_second=1000.0)
    target = loopback(served.base_url)
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "a.csv", places(30))
    a = Running(lambda ev: placeflow.run([str(csv)], db=db, target=target,
                                         options=RunOptions(route="job"), on_event=ev))  # fmt: skip
    assert a.polled.wait(120), a.error
    state = refresh_stale_places(db=str(db), older_than="0", claim_wait=0, return_state=True)
    data = state.result(raise_on_failure=False)
    clock.advance(3600)
    first = a.done()
    assert isinstance(data, dict) and data["status"] == "completed", data
    assert data["submitted"] == 0 and data["exit_code"] == 0
    assert first.submitted == 30 and first.status == "completed"
    account = served.sandbox.backend.keys[KEY].account
    assert account.rows_billed_twice() == [] and sum(account.rows_billed.values()) == 30
