"""`placeflow research`: a mode of the run, as refresh is: the run's order and machinery, with
research's request kind (`placeflow.pipeline.research`) plugged into its stages.

    warehouse ─▶ [read ─▶ normalize ─▶ dedupe] ─▶ fresh ─▶ plan ─▶ budget ─▶ open ─▶ send
        ─▶ account        (a run found unfinished: budget ─▶ send ─▶ account)

Every stage goes through `Stages` (`placeflow.runner.steps`): announced as events, timed, its
typed info kept, and called through the step wrapper, so a flow gets a Prefect task per stage.
Read, normalize and dedupe run through the run's staging (`placeflow.runner.prepare.gather`) in
a scratch database with the warehouse let go; the warehouse is the run's writer
(`placeflow.store.writer.Writer`), told by the client whenever it is to wait (a request whose
answer is slow, the rate gate, a backoff) and let go then, so readers are kept out as briefly as
a run keeps them. One place is researched once and its answers fan out to every
input row with its place_key; a place with a fresh answer for every field of the same spec is
skipped. Nothing is sent before the estimate (from the rate card) is within `--max-credits` and
the key's balance, and the service's own `estimate_only` answer agrees with it. The same command
resumes a run that stopped (crash, budget, credits, unavailable research) instead of planning it
again. Its account is the run's (`placeflow.pipeline.account.account`, research's requests
counted by `research_tally`) and so is its end: the run's `RunSummary`, or `BudgetRefused` and
`CreditsRanOut` raised with it (`placeflow.runner.research_due.ended_research` ends it as
`placeflow.runner.ending` ends a run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import InsufficientCredits
from placeflow.errors import (
    EXIT_OK,
    EXIT_REFUSED,
    BudgetRefused,
    OptionsError,
    Stop,
    stop,
)
from placeflow.events import Event, Note, RunStarted, StageStarted
from placeflow.pipeline.account import RunSummary, account
from placeflow.pipeline.research.account import research_tally, run_row
from placeflow.pipeline.research.budget import Budget, Within, budget
from placeflow.pipeline.research.estimate import refusal_of
from placeflow.pipeline.research.fresh import field_shas, mark_fresh
from placeflow.pipeline.research.plan import READ_AS as READ_AS
from placeflow.pipeline.research.plan import Rates
from placeflow.pipeline.research.plan import ResearchOptions as ResearchOptions
from placeflow.pipeline.research.plan import read_options as read_options
from placeflow.pipeline.research.prepare import Prepared, open_research, plan, sampled
from placeflow.pipeline.research.send import Hook, SendContext, SendInfo, send_all
from placeflow.pipeline.source import Source
from placeflow.pipeline.staging import Staging
from placeflow.runner.budget import within_budgets
from placeflow.runner.orchestrate import finish, warned
from placeflow.runner.prepare import Preview, as_source, fingerprint, gather
from placeflow.runner.steps import SYSTEM_TIMER, Stages, Step, Timer, direct, emitter
from placeflow.runner.target import Target
from placeflow.state.owners import carrying, not_carried
from placeflow.state.records import DEDUPED, REJECTS
from placeflow.state.runbook import RunBook
from placeflow.state.runstate import Clock, new_run_id, unfinished_run, utc_now
from placeflow.store.warehouse import DEFAULT_DB, connect, sql_text
from placeflow.store.writer import Writer

RUN_PREFIX = "rr"
"""A research run's id: rr_<utc timestamp>_<random hex> (`placeflow.state.runstate.new_run_id`)."""


def research(
    inputs: Sequence[str] | Source,
    options: ResearchOptions,
    *,
    target: Target,
    db: Path | str = DEFAULT_DB,
    hook: Hook | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Clock = utc_now,
    on_event: Callable[[Event], None] | None = None,
    step: Step = direct,
    timer: Timer = SYSTEM_TIMER,
) -> RunSummary:
    """Run (or resume) the research of the places of `inputs` (files, or a `Source` such as
    the warehouse's due places) against `target`, and return the run's summary
    (`placeflow.pipeline.account.RunSummary`, its research figures in `research`): completed,
    or interrupted (stopped part way: the same command goes on). As a run, it raises
    `BudgetRefused` when a budget, the balance or the service's field policy refused it before
    sending, and `CreditsRanOut` when the budget or the key's credits ran out part way, each
    carrying the summary (`errors.EXIT_CODES`: exit code 3). `on_event` receives the run's
    typed events (`placeflow.events`); `step` wraps each stage (a Prefect task in the flow);
    `hook` is told each request's moments (sent, received, answered) and `sleep` waits
    between tries of unavailable research."""
    started = clock()
    r = Stages(step=step, emit=emitter(on_event), timer=timer)
    source = as_source(inputs)
    if options.estimate_only:
        raise OptionsError("--estimate spends nothing: it is `estimate()`, not `research()`")
    run_options = options.run
    print_ = fingerprint(source, options.reading(), *options.identity())
    r.emit(StageStarted("warehouse"))  # opened (or waited for) before anything else
    # the writer opens the file at its first statement; the client tells it when it is to wait
    with (
        Writer(db, wait=run_options.warehouse_wait) as wh,
        target.client(waiting=wh.waiting) as api,
    ):
        rates = Rates.from_card(api.pricing())
        found = unfinished_run(wh.con, print_, also=("planned", "refused"))
        if found is not None:
            not_carried(wh.con, found, clock())  # a live process carrying it out is not raced
            run_id = found
            checked = r.stage("budget", budget)(
                wh, api, run_id, max_credits=options.max_credits,
                within=_within(wh, clock, exclude_run=run_id),
            )  # fmt: skip
        else:
            wh.let_go()  # others may read while the rows are read and deduped, apart
            prepared = _prepare(r, source, options, rates, wh, now=clock())
            checked = r.stage("budget", budget)(
                wh, api, None, max_credits=options.max_credits, prepared=prepared,
                within=_within(wh, clock),
            )  # fmt: skip
            run_id = new_run_id(started, RUN_PREFIX)
            run = run_row(
                run_id, started, options, fingerprint=print_, inputs=source.inputs,
                target=target.label, key_hint=api.key_hint, estimate=prepared.estimate,
                rates=rates, counts=prepared.counts(),
            )  # fmt: skip
            if checked.refused:
                run.update(status="refused", message=checked.message)
            r.stage("open", open_research)(wh.con, prepared, run)
        book = RunBook(wh, run_id, clock=clock)
        wh.on_wait = book.beat
        if checked.refused:
            r.emit(Note(str(checked.message)))
            if found is not None:
                book.moved("refused", message=checked.message)
            refused = _account(r, book, None, warn=False)
            raise BudgetRefused(str(checked.message), run_id=run_id, summary=refused)
        with carrying(run_id, con=wh.con, clock=clock):  # its lease beats all the while
            if found is not None:  # this process carries it out from now
                book.take_over()
            ctx = SendContext(
                db=wh, api=api, run_id=run_id, spec=options.spec, rates=rates,
                field_shas=field_shas(options.spec), now=clock, sleep=sleep,
                max_credits=options.max_credits, exclusive_key=options.exclusive_key,
                resend_uncertain=run_options.resend_uncertain, hook=hook, emit=r.emit,
            )  # fmt: skip
            book.moved("started", usage_before=checked.usage_before, message=None)
            r.emit(RunStarted(run_id, "research", checked.credits, resumed=found is not None))
            sent = r.stage("send", _send)(ctx)
            if sent.message:
                r.emit(Note(sent.message))
            if sent.status == "refused":  # by the service's field policy: nothing more sent
                book.moved("refused", message=sent.message)
            elif sent.status == "interrupted":  # the account closes a completed one
                book.interrupted(str(sent.message))
            summary = _account(r, book, api, warn=not sent.refused)
        ended = sent.stop.ended(run_id, summary) if sent.stop is not None else None
        if ended is not None:  # as a run's: refused, or its credits ran out
            raise ended
        return summary


def _prepare(
    r: Stages,
    source: Source,
    options: ResearchOptions,
    rates: Rates,
    db: Writer | None,
    *,
    now: datetime,
) -> Prepared:
    """read → normalize → dedupe through the run's staging (a scratch database, the warehouse
    let go), then fresh and plan on what it left (in one hold of the warehouse `db`, if any)."""
    with Staging.scratch() as scratch:
        gather(r, source, options.run, scratch, not_a_match=None)
        deduped, rejects = scratch.frame(DEDUPED), scratch.frame(REJECTS)
    deduped, rejects = sampled(deduped, rejects, options.sample)
    spec, age, force = options.spec, options.run.max_age_days, options.run.force
    with db.held() if db is not None else nullcontext() as con:
        marked, _ = r.stage("fresh", mark_fresh)(
            deduped, spec, con=con, now=now, max_age_days=age, force=force
        )
        return r.stage("plan", plan)(marked, rejects, spec, rates)[0]


def estimate(
    inputs: Sequence[str] | Source,
    options: ResearchOptions,
    *,
    target: Target,
    db: Path | str = DEFAULT_DB,
    clock: Clock = utc_now,
    on_event: Callable[[Event], None] | None = None,
    step: Step = direct,
    timer: Timer = SYSTEM_TIMER,
) -> dict[str, Any]:
    """`placeflow research --estimate`: what the research of `inputs` would cost, checked with
    the service; nothing spent (the document `--estimate --json` prints, its `exit_code` 3
    when the research would be refused): the run's `Preview` (`placeflow.runner.prepare`) of
    it, as research's document."""
    r = Stages(step=step, emit=emitter(on_event), timer=timer)
    with target.client() as api:
        rates = Rates.from_card(api.pricing())
        seen = _preview(r, api, as_source(inputs), options, rates, db=db, now=clock())
    return r.stage("account", estimated)(seen, rates, target=target.label)


def _preview(
    r: Stages,
    api: PlaceApiClient,
    source: Source,
    options: ResearchOptions,
    rates: Rates,
    *,
    db: Path | str,
    now: datetime,
) -> Preview:
    """The stages up to the plan (against the warehouse read-only, when there is one), and
    the estimate checked with the service and the budgets: what a research of `source` would
    do, as a run's preview says it, its `refusal` why it would be refused now."""
    existing = Path(db).exists() and str(db) != ":memory:"
    con = connect(db, read_only=True) if existing else None
    reader = Writer.over(con) if con is not None else None
    try:
        prepared = _prepare(r, source, options, rates, reader, now=now)
        refused = refusal_of(api, prepared.plan)  # the service's estimate and field policy
        if reader is not None and refused is None and prepared.estimate.credits:
            checked = r.stage("budget", budget)(  # the balance and the warehouse's budgets
                reader, api, None, max_credits=None, prepared=prepared,
                within=_within(reader, lambda: now), priced=True,
            )  # fmt: skip
            if checked.refused:
                refused = checked.message
    finally:
        if con is not None:
            con.close()
    counts = prepared.counts()
    return Preview(
        rows_read=counts["rows_read"], rejected=counts["rejected"],
        duplicates=counts["duplicates"], skipped_fresh=counts["skipped_fresh"],
        to_send=prepared.estimate.places, estimate=prepared.estimate, stages=r.stages,
        refusal=refused,
    )  # fmt: skip


def estimated(seen: Preview, rates: Rates, *, target: str) -> dict[str, Any]:
    """`--estimate`'s document (its account stage) from the preview: its keys are kept for the
    scripts that read them (`credits_estimated`, `credits_per_row`, `requests`, ...), its
    `exit_code` 3 (`EXIT_REFUSED`) when the research would be refused."""
    code = EXIT_OK if seen.refusal is None else EXIT_REFUSED
    e = seen.estimate
    return {
        "status": "estimated" if code == EXIT_OK else "refused", "target": target,
        "rows_read": seen.rows_read, "rejected": seen.rejected, "duplicates": seen.duplicates,
        "skipped_fresh": seen.skipped_fresh, "to_send": seen.to_send, "requests": e.requests,
        "credits_estimated": e.credits, "credits_per_row": e.credits_per_place,
        "credits_per_field": rates.per_field, "credits_per_identity": rates.per_identity,
        "message": seen.refusal, "exit_code": code,
    }  # fmt: skip


def _within(db: Writer, clock: Clock, *, exclude_run: str | None = None) -> Within:
    """The warehouse's budgets of research (`placeflow.runner.budget.within_budgets`), read on
    the research's writer."""
    return lambda credits, usage: within_budgets(
        db.con, credits, kind="research", now=clock(), usage=usage, exclude_run=exclude_run
    )


def _send(ctx: SendContext) -> SendInfo:
    """The send stage: every request the run has not settled, in order (`send_all`); how it
    ended (completed, or stopped: by the budget, the credits, a policy, unavailable research,
    or requests left lost or uncertain)."""
    stopped: Stop | None = None
    try:
        send_all(ctx)
    except Stop as exc:
        stopped = exc
    except InsufficientCredits as exc:
        stopped = stop("credits", str(exc))
    totals = ctx.con.execute(sql_text("queries/research_totals"), {"run_id": ctx.run_id})
    found = totals.fetchone()
    doubtful = int(found[3]) if found else 0
    message = str(stopped) if stopped is not None else None
    if stopped is None and doubtful:
        message = (
            f"{doubtful} request(s) lost or uncertain: their places have no answer;"
            " rerun with --resend-uncertain to buy them again. " + "; ".join(ctx.notes)
        )
    return SendInfo(requests=ctx.sent, doubtful=doubtful, stop=stopped, message=message)


def _account(r: Stages, book: RunBook, api: PlaceApiClient | None, *, warn: bool) -> RunSummary:
    """The account stage, however the research ended: the run's account
    (`placeflow.pipeline.account.account`) of research's requests (`research_tally`), and
    (`warn`) the budgets its spending took past their warning share, said, as a run's are.
    `api` None: the usage is not read (a research refused before sending)."""
    summary = r.stage("account", account)(book, api, tally=research_tally)
    if warn and api is not None:
        summary = warned(summary, r, api, book)
    return finish(summary, r)


__all__ = ["READ_AS", "Budget", "ResearchOptions", "estimate", "read_options", "research"]
