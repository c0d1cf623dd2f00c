"""A large input is looked up and planned beside the warehouse, not in its hold: read-only, so
readers open it meanwhile, and checked again in the hold that records the run, so that a place
another run answered or took in between is not bought twice. What is asserted is what a
reader process and the sandbox themselves saw."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import ManualClock
from placeflow.options import RunOptions
from placeflow.pipeline.fresh import changed_since
from placeflow.runner import opening
from placeflow.runner.prepare import SMALL_INPUT
from placeflow.state.checks import run_checks
from placeflow.store import dbfile
from placeflow.store.warehouse import open_database

from .conftest import KEY, Served, ServeSandbox, places, write_csv
from .test_claims import Running, loopback

N = 500
"""Places in the input: more than SMALL_INPUT bytes, so read in a scratch database."""

READ = "import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); print(c.execute('select count(*) from runs').fetchall()[0][0])"  # noqa: E501 - one line for -c


def billed_once(served: Served, places: int) -> None:
    """The sandbox itself billed `places` rows in all, none twice."""
    account = served.sandbox.backend.keys[KEY].account
    assert account.rows_billed_twice() == []
    assert sum(account.rows_billed.values()) == places


def after_lookup(monkeypatch: pytest.MonkeyPatch, inside: Callable[[], None] | None = None,
                 after: Callable[[], None] | None = None, *, at: int = 0) -> None:  # fmt: skip
    """The first run's look-up beside the warehouse (`at` 0; 1: its look once its parts are
    written), with `inside` called while the warehouse is attached and `after` once it was let
    go (before what follows it)."""
    real = opening.attached
    calls = [0]

    @contextmanager
    def attached(con: duckdb.DuckDBPyConnection, path: Path, *, wait: float) -> Iterator[bool]:
        mine, calls[0] = calls[0] == at, calls[0] + 1
        with real(con, path, wait=wait) as beside:
            assert beside or not mine  # the run's own look-up is beside the warehouse
            yield beside
            if mine and inside is not None:
                inside()
        if mine and after is not None:
            after()

    monkeypatch.setattr(opening, "attached", attached)


Ask = tuple[str, int, bool]
"""One `changed_since` (`counting`): where it was asked (beside the warehouse, after the parts
are written, or in the hold), what it found, and whether it looked the places to send up (it
does only when an outcome was loaded or a chunk began claiming since the lookup, or the look)."""


def counting(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[Ask], Any]:
    """A step recording the stages' names, and every `changed_since` asked (`Ask`)."""
    steps: list[str] = []
    asks: list[Ask] = []

    def step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        steps.append(name)
        return fn

    def counted(*args: Any, to_send: Callable[[str], None], **kwargs: Any) -> int:
        looked = [False]

        def bring(table: str) -> None:
            looked[0] = True
            to_send(table)

        found = changed_since(*args, to_send=bring, **kwargs)
        asks.append(("beside" if to_send is opening._here else "hold", found, looked[0]))
        return found

    monkeypatch.setattr(opening, "changed_since", counted)
    return steps, asks, step


QUIET = [("beside", 0, False), ("hold", 0, False)]
"""A run's asks when nothing changed since its lookup: no place looked up again, anywhere."""


def test_readers_open_the_warehouse_while_a_run_looks_up_and_plans_beside_it(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run of a large input, its plan made while another process opens the warehouse
    read-only and reads it. Nothing was answered or taken since, so the plan made beside the
    warehouse is the one recorded (the fresh stage ran once); the run buys only the places the
    first did not."""
    served = serve_sandbox(fail_rate=0.0)
    target = loopback(served.base_url)
    db = tmp_path / "wh.duckdb"
    first = write_csv(tmp_path / "a.csv", places(N))
    assert first.stat().st_size > SMALL_INPUT
    assert placeflow.run([str(first)], db=db, target=target).status == "completed"
    read: list[subprocess.CompletedProcess[str]] = []

    def reader() -> None:
        read.append(subprocess.run([sys.executable, "-c", READ, str(db)], capture_output=True,
                                   text=True, timeout=60, check=False))  # fmt: skip

    after_lookup(monkeypatch, inside=reader)
    steps, asks, step = counting(monkeypatch)
    second = placeflow.run([str(write_csv(tmp_path / "b.csv", places(N, start=N // 2)))], db=db,
                           target=target, step=step)  # fmt: skip
    assert asks == QUIET and steps.count("fresh") == 1  # nothing loaded or claimed since
    assert read and read[0].returncode == 0, read[0].stderr if read else "no reader ran"
    assert read[0].stdout.strip() == "1"  # the reader saw the first run, beside the lookup
    assert (second.status, second.skipped_fresh, second.submitted) == ("completed", N // 2, N // 2)
    billed_once(served, N + N // 2)


def answered_meanwhile(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch, *, at: int
) -> tuple[Served, list[Ask], list[str]]:
    """Run A of N places; run B of the same places buys and loads them all right after A's
    attach number `at` (0: its lookup; 1: its look once its parts are written). A buys none,
    B all; the sandbox, its asks and its steps."""
    served = serve_sandbox(fail_rate=0.0)
    target = loopback(served.base_url)
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "p.csv", places(N))
    done: list[Any] = []
    steps, asks, step = counting(monkeypatch)
    after_lookup(monkeypatch, at=at, after=lambda: done.append(
        placeflow.run([str(csv)], db=db, target=target, new_run=True)))  # fmt: skip
    a = placeflow.run([str(csv)], db=db, target=target, step=step)
    (b,) = done
    assert (b.status, b.submitted) == ("completed", N)
    assert (a.status, a.submitted, a.skipped_fresh) == ("completed", 0, N)
    billed_once(served, N)
    with duckdb.connect(str(db), read_only=True) as con:
        checks = run_checks(con)
    assert checks == dict.fromkeys(checks, 0)
    return served, asks, steps


def test_places_answered_between_the_lookup_and_the_hold_are_not_bought_again(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A looks up its places (none fresh) and lets the warehouse go; run B of the same places
    buys and loads them all before A takes the hold. A finds them answered since, lets go, looks
    up and plans again beside the warehouse, and buys none: the sandbox billed each place once."""
    _, asks, steps = answered_meanwhile(tmp_path, serve_sandbox, monkeypatch, at=0)
    # B's; A's look beside the warehouse once its parts were written: all answered since (B
    # loaded them), looked up there, not in the hold; A's again once it planned again
    assert asks == [*QUIET, ("beside", N, True), *QUIET]
    assert steps.count("fresh") == 2 and steps.count("plan") == 2  # beside the warehouse twice


def test_places_answered_between_the_look_and_the_hold_are_found_in_the_hold(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A writes its parts and looks beside the warehouse (nothing changed); run B of the same
    places then buys and loads them all before A takes the hold: the hold asks what changed
    since that look, looks A's places up there, lets go and A plans again and buys none."""
    _, asks, steps = answered_meanwhile(tmp_path, serve_sandbox, monkeypatch, at=1)
    assert asks == [("beside", 0, False), *QUIET, ("hold", N, True), *QUIET]
    assert steps.count("fresh") == 2  # beside the warehouse twice


def test_places_a_run_took_between_the_lookup_and_the_hold_are_left_to_it(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A looks up its places and lets the warehouse go; run B, half of whose places are A's,
    opens and sends them (its job cannot end: the sandbox's clock stands still) before A takes
    the hold. A leaves B's places to B and takes their answers once B loads them; the sandbox
    billed each place once."""
    clock = ManualClock()
    served = serve_sandbox(clock=clock, rows_per_second=1000.0, fail_rate=0.0)
    target = loopback(served.base_url)
    db = tmp_path / "wh.duckdb"
    a_csv = write_csv(tmp_path / "a.csv", places(N))
    b_csv = write_csv(tmp_path / "b.csv", places(N, start=N // 2))
    job = RunOptions(route="job", claim_wait=120)
    b_box: list[Running] = []

    def start_b() -> None:
        b = Running(lambda ev: placeflow.run([str(b_csv)], db=db, target=target, options=job,
                                             on_event=ev))  # fmt: skip
        b_box.append(b)
        assert b.polled.wait(120), b.error  # B's places are claimed: its job is in flight

    after_lookup(monkeypatch, after=start_b)
    _, asks, _ = counting(monkeypatch)
    a = Running(lambda ev: placeflow.run([str(a_csv)], db=db, target=target, options=job,
                                         on_event=ev))  # fmt: skip
    assert a.polled.wait(120), a.error  # A opened (its plan recorded) and sent its own places
    assert b_box[0].thread.is_alive()  # nothing could end while the sandbox's clock stood still
    clock.advance(3600)
    first, second = a.done(), b_box[0].done()
    assert (second.status, second.submitted) == ("completed", N)
    assert (first.status, first.submitted, first.claimed) == ("completed", N // 2, N // 2)
    assert first.claims_answered == N // 2
    # B's; A's look beside: half its places claimed since by B's chunk, looked up there; again
    assert asks == [*QUIET, ("beside", N // 2, True), *QUIET]
    billed_once(served, N + N // 2)


def test_a_run_beside_another_of_its_process_looks_up_in_its_hold(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While this process has the warehouse open otherwise (another run in a thread of it: here
    a connection the test keeps), DuckDB refuses to attach the file beside the scratch: the run
    looks up and plans in its hold instead, and completes."""
    served = serve_sandbox(fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "p.csv", places(N))
    assert placeflow.run([str(csv)], db=db, target=loopback(served.base_url)).status == "completed"
    steps, asks, step = counting(monkeypatch)
    with duckdb.connect(str(db)) as kept:
        again = placeflow.run([str(csv)], db=db, target=loopback(served.base_url), step=step,
                              new_run=True)  # fmt: skip
        assert kept.execute("select count(*) from runs").fetchall() == [(2,)]
    assert (again.status, again.submitted, again.skipped_fresh) == ("completed", 0, N)
    assert asks == [] and steps.count("fresh") == 1  # no lookup beside it, so nothing to recheck
    billed_once(served, N)


def test_a_plan_of_more_than_beside_most_places_is_made_in_the_hold(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A larger input of more places than BESIDE_MOST is read and deduped beside the warehouse
    but looked up and planned in its hold (no recheck: nothing was looked up outside it), and
    buys only the places not answered before."""
    served = serve_sandbox(fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    target = loopback(served.base_url)
    first = write_csv(tmp_path / "a.csv", places(N))
    assert placeflow.run([str(first)], db=db, target=target).status == "completed"
    monkeypatch.setattr(opening, "BESIDE_MOST", N - 1)
    steps, asks, step = counting(monkeypatch)
    second = placeflow.run([str(write_csv(tmp_path / "b.csv", places(N, start=N // 2)))], db=db,
                           target=target, step=step)  # fmt: skip
    assert asks == [] and steps.count("fresh") == 1
    assert (second.status, second.skipped_fresh, second.submitted) == ("completed", N // 2, N // 2)
    billed_once(served, N + N // 2)


def test_a_writer_of_this_process_waits_for_a_lookup_beside_the_warehouse(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer of this process (another run's, in a thread) opening the warehouse while a run
    has it attached beside its scratch is not refused: it waits, and opens once it is let go."""
    served = serve_sandbox(fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    target = loopback(served.base_url)
    assert placeflow.run([str(write_csv(tmp_path / "a.csv", places(N)))], db=db,
                         target=target).status == "completed"  # fmt: skip
    opened: list[Any] = []
    refused = threading.Event()

    tried = dbfile.Backoff.refused

    def refusing(backoff: dbfile.Backoff, exc: duckdb.Error) -> None:  # a refused open marked
        refused.set()
        tried(backoff, exc)

    monkeypatch.setattr(dbfile.Backoff, "refused", refusing)

    def other_writer() -> None:
        con = open_database(db, read_only=False, wait=120)
        opened.append(con.execute("select count(*) from runs").fetchall())
        con.close()

    thread = threading.Thread(target=other_writer, daemon=True)

    def inside() -> None:
        thread.start()
        assert refused.wait(60)  # its open was refused while the file is attached: it waits
        assert not opened

    after_lookup(monkeypatch, inside=inside)
    second = placeflow.run([str(write_csv(tmp_path / "b.csv", places(N, start=N)))], db=db,
                           target=target)  # fmt: skip
    thread.join(120)
    assert opened == [[(1,)]] or opened == [
        [(2,)]
    ]  # it opened between the lookup and the run's end
    assert (second.status, second.submitted) == ("completed", N)


def test_a_run_whose_places_keep_changing_looks_up_in_its_hold_at_last(
    tmp_path: Path, serve_sandbox: ServeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every recheck finds its places answered or taken since (as many runs opening one
    after another would make it), the run looks up and plans beside the warehouse BESIDE_TRIES
    times, then once more in its hold, and buys what is still to buy, once."""
    served = serve_sandbox(fail_rate=0.0)
    db = tmp_path / "wh.duckdb"
    target = loopback(served.base_url)
    assert placeflow.run([str(write_csv(tmp_path / "a.csv", places(N)))], db=db,
                         target=target).status == "completed"  # fmt: skip
    steps, _, step = counting(monkeypatch)
    monkeypatch.setattr(opening, "changed_since", lambda *_args, **_kwargs: 1)
    second = placeflow.run([str(write_csv(tmp_path / "b.csv", places(N, start=N // 2)))], db=db,
                           target=target, step=step)  # fmt: skip
    assert steps.count("fresh") == opening.BESIDE_TRIES + 1
    assert (second.status, second.skipped_fresh, second.submitted) == ("completed", N // 2, N // 2)
    billed_once(served, N + N // 2)
