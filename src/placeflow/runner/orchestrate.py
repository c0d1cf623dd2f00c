"""The order of a run, written once: `run` and `resume`.

    open or resume ─▶ [read ─▶ normalize ─▶ dedupe ─▶ fresh ─▶ plan] ─▶ budget check ─▶ record
        ─▶ submit ─▶ poll ─▶ fetch ─▶ load ─▶ account

The bracketed half, before anything is sent, is `placeflow.runner.prepare.prepare` (which `preview`,
what `placeflow estimate` shows, runs alone). Every stage call goes through `step(name, fn)`:
the identity here, a Prefect task in the flow, which therefore never restates this order.
Each stage is a plain function of
`placeflow.pipeline` returning its own summary; they are kept in `RunSummary.stages`. The
warehouse is the state (`placeflow.state.runstate`): a run found unfinished is resumed, never
redone, and a resumed chunk carries on from the state its row in `jobs` records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.errors import BudgetRefused
from placeflow.events import Event, Note, RunStarted, StageStarted
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary, account
from placeflow.pipeline.known import any_known
from placeflow.pipeline.mapping_report import input_report
from placeflow.pipeline.notamatch import not_a_match_pairs
from placeflow.pipeline.plan import estimate
from placeflow.pipeline.source import Source
from placeflow.pipeline.staging import Staging
from placeflow.runner import budget
from placeflow.runner.carry import carry_out
from placeflow.runner.opening import prepared
from placeflow.runner.prepare import (
    as_source,
    counts_of,
    fingerprint,
)
from placeflow.runner.steps import SYSTEM_TIMER, Stages, Step, Timer, direct, emitter
from placeflow.runner.target import Target, environment_defaults
from placeflow.state.budgets import kind_of, rest_of
from placeflow.state.owners import not_carried, owner_of
from placeflow.state.records import Plan
from placeflow.state.runbook import RunBook, run_row
from placeflow.state.runstate import (
    Clock,
    RunState,
    new_run_id,
    open_run,
    stored_run,
    unfinished_run,
    utc_now,
)
from placeflow.store.dbfile import shared_note
from placeflow.store.writer import Writer, workdir_for
from placeflow.support.objects import Storage

PER_INVOCATION = (
    "poll_timeout", "stuck_after", "idempotency_window", "resend_uncertain", "warehouse_wait",
    "claim_wait", "watch_every",
)  # fmt: skip
"""Options a resume takes from its own invocation rather than from the stored run."""


def _open(
    r: Stages,
    api: PlaceApiClient,
    db: Writer,
    staging: Staging,
    planned: Plan,
    source: Source,
    options: RunOptions,
    *,
    run_id: str,
    parts: bool,
    print_: str,
    target: Target,
    clock: Clock,
    started: datetime,
) -> RunState:
    """Check the budget for the planned places, and record the run with its plan (or refused)
    in one go: in the hold of the warehouse in which the places other runs are buying were
    looked up (`_prepared`), so that this run's own are claimed with nothing between (one
    place, one purchase); `staging` is on `db`'s connection, held for the block."""
    now = clock()
    c = counts_of(r)
    usage = None
    cost = estimate(c["to_send"], options, None)
    if c["to_send"]:  # the rate card and the balance are worth requests only when there is work
        cost = estimate(c["to_send"], options, api.pricing())
        usage = api.usage()
    kind = kind_of(options.mode, source.inputs)
    refused = r.stage("budget", budget.check)(
        staging.con, cost, options, kind=kind, now=now, usage=usage
    )  # the budgets read in the hold that records this run's reservation (its estimate)
    state = RunState(db, run_id, clock=clock)
    counts = {name: c[name] for name in ("rows_read", "rejected", "duplicates", "skipped_fresh")}
    fresh = r.stages["fresh"]
    run = run_row(
        started,  # the run's time counts its reading and dedupe too: one time
        status="refused" if refused else "running", mode=options.mode,
        signature=options.signature, options=options.stored_json(), inputs=source.inputs,
        target=target.label, key_hint=api.key_hint, fingerprint=print_,
        credits_estimated=cost.credits, message=refused,
        counts={**counts, "held_failing": fresh.held_failing, "claimed": fresh.claimed,
                "submitted": 0 if refused else c["to_send"]},  # a refused run sends nothing
        attributes=",".join(options.attributes), include_summary=options.include_summary,
        usage_before=None if usage is None else usage.current_usage,
    )  # fmt: skip
    r.stage("open", open_run)(state, run, None if refused else planned, parts=parts)
    if refused:
        summary = r.stage("account", account)(state, None, started=started)
        raise BudgetRefused(refused, run_id=state.run_id, summary=finish(summary, r))
    r.emit(RunStarted(state.run_id, kind, cost.credits))
    return state


def warned(summary: RunSummary, r: Stages, api: PlaceApiClient, state: RunBook) -> RunSummary:
    """The summary with the budgets this run's spending took past their warning share, said
    and announced (`placeflow.runner.budget.warn`)."""
    kind = rest_of(state.con, state.run_id)[0]
    warned = budget.warn(
        lambda: state.con, kind=kind, now=state.now(), api=api, emit=r.emit, run_id=state.run_id
    )  # fmt: skip
    if not warned:
        return summary
    summary = replace(summary, budget_warnings=warned)
    r.stages["account"] = summary  # the account stage's summary is the one returned
    return summary


def finish(summary: RunSummary, r: Stages) -> RunSummary:
    summary.stages.update(r.stages)  # the account's info is the summary itself: not kept in it
    summary.stages.pop("account", None)
    wall, cpu = r.timings()
    summary = replace(summary, timings=wall, cpu_timings=cpu)
    if summary.status == "refused" and "dedupe" in r.stages:  # no rows recorded: its stage says
        summary = replace(summary, fuzzy_duplicates=r.stages["dedupe"].fuzzy_duplicates)
    return replace(summary, inputs=input_report(r.stages)) if "read" in r.stages else summary


# --- the entry points ---------------------------------------------------------------------------


def run(
    inputs: Source | Sequence[str],
    *,
    options: RunOptions | None = None,
    db: Path | str | None = None,
    target: Target | None = None,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = utc_now,
    timer: Timer = SYSTEM_TIMER,
    new_run: bool = False,
    storage: Storage | None = None,
) -> RunSummary:
    """Validate or enrich the places of `inputs` (files, globs, or a `Source`) into `db`.

    Without a `target`, the service the environment names (PLACEFLOW_API_KEY and
    PLACEFLOW_BASE_URL, or the configuration file), else an embedded sandbox for the length of
    the call; without a `db`, PLACEFLOW_DB or the configuration file's, else DEFAULT_DB
    (`placeflow.config`). An unfinished run of the same inputs and options is resumed, not
    redone, unless a live process carries it out (then a new run buys what that one is not
    buying, and waits for its answers to the rest), or `new_run` asks for a new one. Inputs may
    be ``s3://`` URLs, reached with `storage` (`placeflow.config.storage_settings`). Raises
    `BudgetRefused` (nothing spent) or `CreditsRanOut` (resumable), each carrying the summary.
    """
    if target is None or db is None:
        with environment_defaults(target, db) as (target, db):
            return run(
                inputs, options=options, db=db, target=target, step=step, on_event=on_event,
                clock=clock, timer=timer, new_run=new_run, storage=storage,
            )  # fmt: skip
    options = options or RunOptions()
    source = as_source(inputs, storage)
    started = clock()
    r = Stages(step=step, emit=emitter(on_event), timer=timer)
    r.emit(StageStarted("warehouse"))  # opened (or waited for) before anything else
    shared = shared_note(db)  # said, not refused: one host writing it over a share works
    if shared:
        r.emit(Note(shared))
    # the writer opens the file at its first statement: the client's making (a TLS context,
    # the key's limiter) does not hold it; the client tells the writer when it is to wait
    with (
        Writer(db, wait=options.warehouse_wait) as wh,
        target.client(waiting=wh.waiting) as api,
    ):
        con = wh.con
        print_ = fingerprint(source, options)
        same = None if new_run else _resumable(con, unfinished_run(con, print_), clock(), r)
        if same is not None:
            options = stored_run(con, same).options.model_copy(
                update={n: getattr(options, n) for n in PER_INVOCATION}
            )
            state = _taken_over(r, api, wh, same, options, clock, target.label)
        else:
            fuzzy = options.dedupe == "fuzzy"
            pairs = not_a_match_pairs(con) if fuzzy else None
            ran = fuzzy and any_known(con)  # a new warehouse is not opened again to say none
            now, run_id = clock(), new_run_id(started)
            with prepared(
                r, wh, source, options, pairs, known=ran, now=now, run_id=run_id, clock=clock
            ) as (staging, planned, parts):
                state = _open(
                    r, api, wh, staging, planned, source, options, run_id=run_id, parts=parts,
                    print_=print_, target=target, clock=clock, started=started,
                )  # fmt: skip
        wh.on_wait = state.beat
        workdir = workdir_for(db, state.run_id)
        summary = carry_out(r, api, state, options, workdir, started)
        return finish(warned(summary, r, api, state), r)


def resume(
    run_id: str,
    *,
    db: Path | str | None = None,
    target: Target | None = None,
    poll_timeout: float | None = None,
    resend_uncertain: bool = False,
    stuck_after: float | None = None,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = utc_now,
    timer: Timer = SYSTEM_TIMER,
    watch_every: float | None = None,
) -> RunSummary:
    """Finish a run that stopped part way: re-attach to its jobs, load what was not loaded
    (`watch_every`: `RunOptions.watch_every`, for a live display). Without a `target` or a
    `db`, the environment's, as `run` takes them."""
    if target is None or db is None:
        with environment_defaults(target, db) as (target, db):
            return resume(
                run_id, db=db, target=target, poll_timeout=poll_timeout,
                resend_uncertain=resend_uncertain, stuck_after=stuck_after, step=step,
                on_event=on_event, clock=clock, timer=timer, watch_every=watch_every,
            )  # fmt: skip
    started = clock()
    r = Stages(step=step, emit=emitter(on_event), timer=timer)
    r.emit(StageStarted("warehouse"))
    shared = shared_note(db)
    if shared:
        r.emit(Note(shared))
    with Writer(db) as wh, target.client(waiting=wh.waiting) as api:  # as `run` does
        con = wh.con
        stored = stored_run(con, run_id)
        options = stored.options
        given = {"poll_timeout": poll_timeout, "stuck_after": stuck_after}
        given = {k: v for k, v in given.items() if v is not None}
        given["watch_every"] = watch_every
        options = options.model_copy(update={**given, "resend_uncertain": resend_uncertain})
        not_carried(con, run_id, clock())
        state = _taken_over(r, api, wh, run_id, options, clock, target.label)
        wh.on_wait = state.beat
        summary = carry_out(r, api, state, options, workdir_for(db, run_id), started)
        return finish(warned(summary, r, api, state), r)


def _taken_over(
    r: Stages,
    api: PlaceApiClient,
    wh: Writer,
    run_id: str,
    options: RunOptions,
    clock: Clock,
    service: str | None = None,
) -> RunState:
    """A stored run taken over by this process (on the service labelled `service`) once the
    rest of its estimate is within the budgets (checked and reserved in one hold of the
    warehouse, as a new run's open is); `BudgetRefused` (the run left as it was) when it is
    not."""
    with wh.held() as con:
        kind, rest, places = rest_of(con, run_id)
        unsent = estimate(places, options, None)  # a job holds 1 credit a row
        usage = api.usage() if rest else None
        refused = r.stage("budget", budget.check)(  # the balance: what it may yet hold
            con, unsent, options, kind=kind, now=clock(), usage=usage, exclude_run=run_id,
            rest=rest,
        )  # fmt: skip
        if refused:
            raise BudgetRefused(f"run {run_id} was not resumed: {refused}", run_id=run_id)
        state = RunState(wh, run_id, clock=clock)
        moved = state.take_over(service)
    if moved:
        r.emit(Note(moved))
    r.emit(RunStarted(run_id, kind, rest, resumed=True))
    return state


def _resumable(
    con: duckdb.DuckDBPyConnection, run_id: str | None, now: datetime, r: Stages
) -> str | None:
    """`run_id` (an unfinished run of the same command) when this process may resume it: not
    while a live process carries it out (said, and a new run is opened)."""
    owner = owner_of(con, run_id) if run_id else None
    if owner is None or not owner.alive(now):
        return run_id
    r.emit(
        Note(
            f"run {run_id} of the same command is being carried out by {owner.describe()}: a"
            " new run buys what it is not buying and waits for its answers"
        )
    )
    return None
