"""A new run's places prepared for its open: read, deduped, looked up and planned, with the
warehouse held as little as the input allows (`prepared`; `placeflow.runner.orchestrate` opens
the run inside its block).

    small input:  [hold: read ─▶ normalize ─▶ dedupe ─▶ fresh ─▶ plan ─▶ (open)]
    larger input: read ─▶ normalize ─▶ dedupe          (a scratch database, the warehouse let go)
                  fresh ─▶ plan                        (the warehouse attached read-only beside it)
                  [hold: changed since? ─▶ (open)]     (no: the plan stands; yes: again beside)

One place, one purchase: the places other runs are buying or have answered are looked up in the
hold that records this run's own, whatever the path (`changed_since`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from datetime import datetime
from functools import partial

import polars as pl

from placeflow.options import RunOptions
from placeflow.pipeline.fresh import changed_since, for_recheck
from placeflow.pipeline.known import KnownLookup, known_places
from placeflow.pipeline.source import Source
from placeflow.pipeline.staging import MOVE_LIMIT, Staging
from placeflow.runner.prepare import gather, plan_places, small_input
from placeflow.runner.steps import Stages
from placeflow.state.opening import Parts, opening
from placeflow.state.records import DEDUPED, MARKED, MATCHED, REJECTS, REQUESTS, Plan, plan_rows
from placeflow.state.runbook import Clock
from placeflow.store.attach import attached
from placeflow.store.warehouse import settings
from placeflow.store.writer import Writer

EVERY_CORE = {"threads": str(os.cpu_count() or 1)}
"""DuckDB's threads for a new run's prepare and open (its fresh, plan and open stages), which
delay its first request: the writer's other work runs on one thread (WAREHOUSE_SETTINGS)."""
BESIDE_MOST = 3_000_000
"""Deduped places above which a run looks up and plans in its hold, as a smaller one does after
BESIDE_TRIES: its open alone then keeps readers out for many seconds (ten million places: 54 s),
and a plan of that size made beside the warehouse cost more than it saved (measured when the
open read it from the scratch in one transaction, at 10,000,000 places: 13% more CPU, 220 MB
more peak RSS; 2,500,000: 2% and 40 MB)."""
BESIDE_TRIES = 3
"""Times a larger input is looked up and planned beside the warehouse before it is done in the
hold: each try after the first follows another run's open or load between the lookup and the
hold (two runs started together meet it once), and costs CPU, not readers' time."""


@contextmanager
def prepared(
    r: Stages, wh: Writer, source: Source, options: RunOptions,
    pairs: pl.DataFrame | None, *, known: bool, now: datetime, run_id: str, clock: Clock,
) -> Iterator[tuple[Staging, Plan, bool]]:  # fmt: skip
    """The warehouse's staging, held for the block (its tables must outlive the client's
    waits), with the source read, normalised, deduped (`gather`; `known`: the places the
    warehouse knows are looked up), looked up and planned (`plan_places`); the plan; and
    whether its rows were written in parts under `run_id` before the hold (the open then
    records the run and its chunks alone: `placeflow.state.opening`).

    A small input (`small_input`) is all of it in the hold. A larger one is read in a scratch
    database with the warehouse let go, then looked up and planned there with the warehouse
    attached read-only, so that others may read meanwhile, and its rows written in parts, the
    writer letting readers in between stretches. Whether a run answered or took one of its
    places since the lookup (`changed_since`) is asked beside the warehouse once the parts are
    written (the places to send are in the scratch), and again in the hold, about what changed
    since that look alone (moments: no place is brought into the hold unless something did).
    Either finding one, the hold is let go, the parts dropped and the lookup and plan made
    beside it again, up to BESIDE_TRIES times, and
    in the hold after that (and at once for more than BESIDE_MOST places, or when another
    thread of this process has the file open: `attached`). The staging's tables are dropped
    after the block (the plan is in the run's tables by then, or the run refused), and the
    parts of a run not recorded by then."""
    with ExitStack() as stack:
        if small_input(source):
            staging = _held(stack, wh, cores=False)  # moments of work: the writer's one thread
            con = staging.con
            lookup = (lambda keys: known_places(con, keys)) if known else None
            gather(r, source, options, staging, not_a_match=pairs, known=lookup)
            yield staging, plan_places(r, options, staging, now), False
            return
        wh.let_go()
        scratch = stack.enter_context(Staging.scratch())
        scratch_lookup = _known_lookup(wh) if known else None
        gather(r, source, options, scratch, not_a_match=pairs, known=scratch_lookup)
        tries = BESIDE_TRIES if scratch.count(DEDUPED) <= BESIDE_MOST else 0
        parts = stack.enter_context(opening(wh, run_id, clock=clock)) if tries else None
        for _ in range(tries):
            assert parts is not None
            wh.let_go()  # the sweep's or an earlier try's: the lookup attaches the file
            with attached(scratch.con, wh.path, wait=wh.wait) as beside:
                if not beside:
                    break
                ahead = Staging(scratch.con, warehouse=True)  # the scratch, the warehouse beside
                scratch.drop(MARKED, REQUESTS)  # an earlier try's
                planned = plan_places(r, options, ahead, now, keep_deduped=True)
                recheck = for_recheck(ahead)
            r.expect("budget", "open")  # the timings in the data's order: the budget's first
            r.timed("open", partial(_write_plan, parts, scratch))  # the open's work, ahead
            wh.let_go()  # the look beside attaches the file
            with attached(scratch.con, wh.path, wait=wh.wait) as beside:
                moved = bool(beside) and bool(changed_since(ahead, options, now=now, to_send=_here))
                if beside and not moved:  # the hold asks what changed since this look: moments
                    recheck = for_recheck(ahead)
            if not moved:
                with ExitStack() as hold:
                    staging = _held(hold, wh)
                    scratch.move_to(staging, *recheck)  # a row a load or a chunk: small
                    to_send = partial(scratch.move_to, staging)  # a row a place: when asked
                    if not changed_since(staging, options, now=now, to_send=to_send):
                        scratch.drop(DEDUPED, MARKED, REQUESTS, MATCHED, REJECTS)  # in parts
                        yield staging, planned, True
                        return
                wh.let_go()  # its temporary tables with it
            parts.drop()  # written again from the plan made again
        staging = _held(stack, wh)
        scratch.drop(MARKED, REQUESTS)
        scratch.move_to(staging, DEDUPED, MATCHED, REJECTS)
        yield staging, plan_places(r, options, staging, now), False


def _write_plan(parts: Parts, scratch: Staging) -> None:
    """The plan staged in `scratch` written in parts, named first even when it has no rows (a
    refresh whose places were all claimed)."""
    parts.begin()
    with scratch.limited(MOVE_LIMIT):  # it is read a batch at a time
        for table, select in plan_rows(scratch.con):
            parts.write(table, scratch.batches(select))


def _here(_table: str) -> None:
    """`changed_since`'s `to_send` beside the warehouse: the places to send are here already."""


def _held(stack: ExitStack, wh: Writer, *, cores: bool = True) -> Staging:
    """The warehouse's staging, held until `stack` closes (its tables dropped then); with
    `cores`, the work before the first request on every core (EVERY_CORE)."""
    con = stack.enter_context(wh.held())
    if cores:
        stack.enter_context(settings(con, **EVERY_CORE))
    return stack.enter_context(closing(Staging(con, warehouse=True)))


def _known_lookup(wh: Writer) -> KnownLookup:
    """The dedupe stage's look-up of known places: the warehouse taken for the one query
    (waiting for a writer as any statement does) and let go again."""

    def lookup(keys: pl.DataFrame) -> pl.DataFrame:
        try:
            return known_places(wh.con, keys)
        finally:
            wh.let_go()

    return lookup
