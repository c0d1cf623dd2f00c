"""The order of a run, written once: `run` and `resume`.

    open or resume ─▶ [read ─▶ normalize ─▶ dedupe ─▶ fresh ─▶ plan] ─▶ budget check ─▶ record
        ─▶ submit ─▶ poll ─▶ fetch ─▶ load ─▶ account

The bracketed half, before anything is sent, is `placeflow.prepare.prepare` (which `preview`,
what `placeflow estimate` shows, runs alone). Every stage call goes through `step(name, fn)`:
the identity here, a Prefect task in the flow, which therefore never restates this order.
Each stage is a plain function of
`placeflow.pipeline` returning its own summary; they are kept in `RunSummary.stages`. The
warehouse is the state (`placeflow.runstate`): a run found unfinished is resumed, never redone,
and a resumed chunk carries on from the state its row in `jobs` records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import DownloadError, InsufficientCredits, NotFound, TransientError
from placeflow.api.feed import JobFeed
from placeflow.api.jobref import PendingJob
from placeflow.api.models import JobStatus
from placeflow.errors import BudgetRefused, CreditsRanOut
from placeflow.events import Event, Note
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary, account
from placeflow.pipeline.fetch import Fetched, fetch, on_disk
from placeflow.pipeline.load import LoadError, load
from placeflow.pipeline.mapping_report import input_report
from placeflow.pipeline.plan import estimate, refusal
from placeflow.pipeline.poll import poll, unknown_job
from placeflow.pipeline.read import Source
from placeflow.pipeline.resend import vet
from placeflow.pipeline.staging import Staging
from placeflow.pipeline.submit import send_batch, submit_job
from placeflow.prepare import as_source, counts_of, fingerprint, prepare
from placeflow.runstate import (
    NO_RESULT_FILE,
    UNKNOWN_JOB,
    Clock,
    RunState,
    new_run_id,
    open_run,
    stored_run,
    unfinished_run,
    utc_now,
)
from placeflow.sender import Sender, locked
from placeflow.service import Target
from placeflow.steps import SYSTEM_TIMER, Stages, Step, Timer, direct, emitter
from placeflow.warehouse import DEFAULT_DB, Warehouse, held_while_writing, workdir_for

ENDED_OR_SUBMITTED = ("submitted", "completed", "cancelled")
"""The states of a chunk whose job the service may no longer know (`UNKNOWN_JOB`): submitted,
or ended before the run stopped and not loaded."""
CHUNK_FAILURES = (DownloadError, LoadError, NotFound, TransientError)
"""What settling one chunk may raise that is that chunk's alone: noted on it, retried by a
resume, never stopping the others (NotFound: its job, asked for a fresh file URL, is unknown to
the service)."""


RESENDABLE = {
    UNKNOWN_JOB: "was unknown to the service",
    NO_RESULT_FILE: "showed no result file for its processed rows",
}
"""The chunks `--resend-uncertain` sends again (their places may be paid twice), by
`jobs.error_code`, and what became of their jobs."""


PER_INVOCATION = (
    "poll_timeout", "stuck_after", "idempotency_window", "resend_uncertain", "warehouse_wait",
)  # fmt: skip
"""Options a resume takes from its own invocation rather than from the stored run."""


def _open(
    r: Stages,
    api: PlaceApiClient,
    staging: Staging,
    source: Source,
    options: RunOptions,
    *,
    print_: str,
    target: Target,
    clock: Clock,
    started: datetime,
) -> RunState:
    """Plan, check the budget, and record the run with its plan (or refused) in one go."""
    now = clock()
    planned = prepare(r, source, options, staging, now)
    c = counts_of(r)
    usage_before = available = None
    cost = estimate(c["to_send"], options, None)
    if c["to_send"]:  # the rate card and the balance are worth requests only when there is work
        cost = estimate(c["to_send"], options, api.pricing())
        usage = api.usage()
        usage_before, available = usage.current_usage, usage.spendable
    refused = r.stage("budget", refusal)(cost, options, available=available)
    state = RunState(staging.con, new_run_id(now), clock=clock)
    run = {
        "created_at": now,
        "status": "refused" if refused else "running",
        "mode": options.mode,
        "attributes": ",".join(options.attributes),
        "include_summary": options.include_summary,
        "signature": options.signature,
        "inputs": json.dumps(list(source.inputs)),
        "options": options.stored_json(),
        "target": target.label,
        "key_hint": api.key_hint,
        "rows_read": c["rows_read"],
        "rejected": c["rejected"],
        "duplicates": c["duplicates"],
        "skipped_fresh": c["skipped_fresh"],
        "held_failing": r.stages["fresh"].held_failing,
        "submitted": c["to_send"],
        "credits_estimated": cost.credits,
        "usage_before": usage_before,
        "message": refused,
        "fingerprint": print_,
    }
    r.stage("open", open_run)(state, run, None if refused else planned)
    if refused:
        summary = r.stage("account", account)(state, None, started=started)
        raise BudgetRefused(refused, run_id=state.run_id, summary=summary)
    return state


# --- sending, and after -------------------------------------------------------------------------


def _carry_out(
    r: Stages,
    api: PlaceApiClient,
    state: RunState,
    options: RunOptions,
    workdir: Path,
    started: datetime,
) -> RunSummary:
    """submit → poll → fetch → load for every chunk not yet loaded, then account; the job
    chunks are submitted by a `Sender` beside the poll, so each is fetched and loaded as soon
    as it ends, while later ones are still being sent."""
    kind, emit = options.mode, locked(r.emit)  # the sender emits from its own thread

    def load_it(fetched: Fetched | None) -> None:
        if fetched is not None:
            r.each("load", load)(state, fetched, kind=kind, emit=emit)

    held: dict[int, str] = {}  # chunks that could not settle (or be sent) now, and why

    def settle(chunk_no: int, get: Callable[[], Fetched | None]) -> None:
        """One chunk's fetch and load; its failure is its own, never the other chunks'."""
        try:
            load_it(get())
        except CHUNK_FAILURES as exc:
            held[chunk_no] = f"chunk {chunk_no}: {type(exc).__name__}: {exc}"
            state.note_error(chunk_no, held[chunk_no])
            emit(Note(f"{held[chunk_no]}; the other chunks carry on"))

    def fetch_of(status: JobStatus) -> Callable[[], Fetched | None]:
        def get() -> Fetched | None:
            return r.each("fetch", fetch)(api, state, status, workdir=workdir, emit=emit)

        return get

    def refetch(batch_id: str) -> Callable[[], Fetched | None]:
        """An ended job's file fetched again; a job the service no longer knows is held."""

        def get() -> Fetched | None:
            try:
                status = api.job_status(batch_id)
            except NotFound as answer:
                unknown_job(state, batch_id, answer, emit)
                return None
            return fetch_of(status)()

        return get

    stopped: str | None = None
    try:
        try:
            for chunk in state.chunks("completed", "cancelled"):  # ended, not loaded: a crash
                found = on_disk(state, chunk)
                if found is not None:
                    settle(chunk.chunk_no, _given(found))
                elif chunk.route == "job" and chunk.batch_id:
                    settle(chunk.chunk_no, refetch(chunk.batch_id))
                else:
                    state.reopened(chunk.chunk_no)
            for chunk in state.chunks("planned", "submitted"):
                if chunk.route == "sync":
                    sent_sync = r.each("send-batch", send_batch)(
                        api, state, chunk, kind=kind, workdir=workdir, emit=emit,
                        resend=options.resend_uncertain,
                    )  # fmt: skip
                    if sent_sync is None:
                        held[chunk.chunk_no] = f"chunk {chunk.chunk_no}: uncertain (see its error)"
                    settle(chunk.chunk_no, _given(sent_sync))
            for chunk in state.chunks(*ENDED_OR_SUBMITTED):
                if chunk.error_code in RESENDABLE and options.resend_uncertain:
                    why = RESENDABLE[str(chunk.error_code)]
                    state.resend_held(chunk.chunk_no, why)
                    held.pop(chunk.chunk_no, None)  # its file was looked for once more above
                    again = "its places are sent again (--resend-uncertain)"
                    emit(Note(f"chunk {chunk.chunk_no}: job {chunk.batch_id} {why}; {again}"))
            resumed = [PendingJob(c.batch_id) for c in state.chunks("submitted") if c.batch_id]
            to_send = [c for c in state.chunks("planned") if c.route == "job"]

            def send_jobs(own: RunState, feed: JobFeed, stopping: Callable[[], bool]) -> None:
                for chunk in to_send:
                    if stopping():
                        return
                    verdict = vet(api, own, chunk, options, own.now())
                    if not verdict.send:
                        held[chunk.chunk_no] = verdict.why
                        own.uncertain(chunk.chunk_no, verdict.why)
                        emit(Note(verdict.why))
                        continue
                    sent = r.each("submit", submit_job)(api, own, chunk, kind=kind, emit=emit)
                    feed.put(sent.pending(api.clock()))

            r.expect(*(["submit", "poll"] if to_send else []))  # the data's order, side by side
            with Sender(state, send_jobs if to_send else None) as sender:
                polled = r.stream("poll", poll)
                for status in polled(
                    api, state, jobs=resumed, feed=sender.feed,
                    timeout=options.poll_timeout, stuck_after=options.stuck_after, emit=emit,
                ):  # fmt: skip
                    settle(state.chunk_of(status.batch_id), fetch_of(status))
            sender.raise_error()
            for chunk in state.chunks(*ENDED_OR_SUBMITTED):
                if chunk.error_code == UNKNOWN_JOB:
                    held[chunk.chunk_no] = (
                        f"chunk {chunk.chunk_no}: job {chunk.batch_id} is unknown to the service"
                        " (resume --resend-uncertain sends it again)"
                    )
            if held:
                stopped_chunks = "; ".join(held[k] for k in sorted(held))
                state.interrupted(
                    f"{len(held)} chunk(s) held: {stopped_chunks}."
                    f" `placeflow resume {state.run_id}` retries them"
                )
        except InsufficientCredits as exc:
            stopped = (
                f"credits ran out: {exc}. Add credits, then `placeflow resume {state.run_id}`;"
                " chunks already submitted are kept"
            )
            emit(Note(stopped))
            state.interrupted(stopped)
    finally:
        summary = r.stage("account", account)(state, api, started=started)
    if stopped:
        raise CreditsRanOut(stopped, run_id=state.run_id, summary=summary)
    return summary


def _given(fetched: Fetched | None) -> Callable[[], Fetched | None]:
    return lambda: fetched


def _finish(summary: RunSummary, r: Stages) -> RunSummary:
    summary.stages.update({k: v for k, v in r.stages.items() if v is not summary})
    wall, cpu = r.timings()
    summary = replace(summary, timings=wall, cpu_timings=cpu)
    return replace(summary, inputs=input_report(r.stages)) if "read" in r.stages else summary


# --- the entry points ---------------------------------------------------------------------------


def run(
    inputs: Source | Sequence[str],
    *,
    options: RunOptions | None = None,
    db: Path | str = DEFAULT_DB,
    target: Target,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = utc_now,
    timer: Timer = SYSTEM_TIMER,
) -> RunSummary:
    """Validate or enrich the places of `inputs` (files, globs, or a `Source`) into `db`.

    An unfinished run of the same inputs and options is resumed, not redone. Raises
    `BudgetRefused` (nothing spent) or `CreditsRanOut` (resumable), each carrying the summary.
    """
    options = options or RunOptions()
    source = as_source(inputs)
    started = clock()
    r = Stages(step=step, emit=emitter(on_event), timer=timer)
    with Warehouse(db, wait=options.warehouse_wait) as wh, target.client() as api:
        con = held_while_writing(wh, api)
        print_ = fingerprint(source, options)
        same = unfinished_run(con, print_)
        if same is not None:
            state = RunState(con, same, clock=clock)
            options = stored_run(con, same).options.model_copy(
                update={n: getattr(options, n) for n in PER_INVOCATION}
            )
        else:
            staging = Staging(con, warehouse=True)
            with wh.held():  # its temporary tables must outlive the client's waits meanwhile
                try:
                    state = _open(
                        r, api, staging, source, options,
                        print_=print_, target=target, clock=clock, started=started,
                    )  # fmt: skip
                finally:
                    staging.close()  # the plan is in the run's tables now (or was refused)
        workdir = workdir_for(db, state.run_id)
        return _finish(_carry_out(r, api, state, options, workdir, started), r)


def resume(
    run_id: str,
    *,
    db: Path | str = DEFAULT_DB,
    target: Target,
    poll_timeout: float | None = None,
    resend_uncertain: bool = False,
    stuck_after: float | None = None,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = utc_now,
    timer: Timer = SYSTEM_TIMER,
) -> RunSummary:
    """Finish a run that stopped part way: re-attach to its jobs, load what was not loaded."""
    started = clock()
    r = Stages(step=step, emit=emitter(on_event), timer=timer)
    with Warehouse(db) as wh, target.client() as api:
        con = held_while_writing(wh, api)
        stored = stored_run(con, run_id)
        options = stored.options
        given = {"poll_timeout": poll_timeout, "stuck_after": stuck_after}
        given = {k: v for k, v in given.items() if v is not None}
        options = options.model_copy(update={**given, "resend_uncertain": resend_uncertain})
        state = RunState(con, run_id, clock=clock)
        return _finish(_carry_out(r, api, state, options, workdir_for(db, run_id), started), r)
