"""The `place_refresh` flow: the library's stages as Prefect tasks, nothing more.

Parameters are the CLI's. The flow process owns the DuckDB connection; tasks run in this
process and hand their results back. Network steps are tasks with retries for transient
failures (the client retries each request first; a task retry resumes from the warehouse,
so it never pays twice).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed

from placeflow.api.errors import InsufficientCredits, PlaceflowError, TransientError
from placeflow.api.models import JobKind, JobStatus
from placeflow.api.poller import JobPoller
from placeflow.config import load_settings
from placeflow.credits import RunSummary, finish
from placeflow.pipeline import execute, runner
from placeflow.pipeline.chunkstate import Chunk, RunContext, chunks
from placeflow.pipeline.plan import RunOptions, estimate, run_options
from placeflow.pipeline.prepare import Prepared, prepare
from placeflow.pipeline.read import InputError
from placeflow.report import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    exit_code_for,
    markdown_summary,
)
from placeflow.service import Target, open_target
from placeflow.warehouse import WarehouseBusy, connect

log = logging.getLogger("placeflow.flow")
TRANSIENT = (TransientError,)


def _retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Task retries are for transient failures only; anything else fails the task at once."""
    try:
        state.result()
    except TRANSIENT:
        return True
    except Exception:
        return False
    return False


_OPEN: dict[str, Any] = {}
"""Open warehouse connections by database path, for the prepare task (see `_ACTIVE`)."""
_ACTIVE: dict[str, RunContext] = {}
"""The open run of this process, by run_id. Tasks take the run_id, not the context: task
parameters stay plain values (readable in Prefect) and Prefect holds no database handle."""


@task(name="prepare", cache_policy=NO_CACHE)
def prepare_task(inputs: list[str], options: RunOptions, db: str, pricing: Any) -> Prepared:
    return prepare(inputs, options, con=_OPEN[db], now=datetime.now(UTC), pricing=pricing)


@task(
    name="submit-chunk",
    cache_policy=NO_CACHE,
    retries=3,
    retry_delay_seconds=5,
    retry_condition_fn=_retry_transient,
)
def submit_task(run_id: str, chunk: Chunk) -> str:
    return execute.submit_chunk(_ACTIVE[run_id], chunk)


@task(
    name="sync-batch",
    cache_policy=NO_CACHE,
    retries=3,
    retry_delay_seconds=5,
    retry_condition_fn=_retry_transient,
)
def sync_task(run_id: str, chunk: Chunk) -> int:
    return execute.run_sync_chunk(_ACTIVE[run_id], chunk).rows


@task(
    name="fetch-and-load",
    cache_policy=NO_CACHE,
    retries=3,
    retry_delay_seconds=5,
    retry_condition_fn=_retry_transient,
)
def settle_task(run_id: str, status: JobStatus) -> int:
    info = execute.settle(_ACTIVE[run_id], status)
    return info.rows if info else 0


@task(name="account", cache_policy=NO_CACHE)
def account_task(run_id: str, started: datetime) -> RunSummary:
    ctx = _ACTIVE[run_id]
    return finish(ctx.con, ctx.api, run_id, started=started)


def _execute(ctx: RunContext) -> None:
    """The steps of `execute.execute_run`, each chunk as its own task run."""
    execute.resume_unloaded(ctx)
    for chunk in chunks(ctx, "planned", "submitted"):
        if chunk.route == "sync":
            sync_task(ctx.run_id, chunk)
    try:
        for chunk in chunks(ctx, "planned"):
            if chunk.route == "job":
                submit_task(ctx.run_id, chunk)
    finally:
        for status in execute.follow(ctx):
            settle_task(ctx.run_id, status)


@flow(name="place_refresh", log_prints=False)
def place_refresh(
    inputs: list[str] | None = None,
    mode: str = "enrich",
    attributes: list[str] | None = None,
    include_summary: bool = False,
    db: str = "data/placeflow.duckdb",
    max_credits: int | None = None,
    max_age: float = 30.0,
    force: bool = False,
    mapping: dict[str, str] | None = None,
    encoding: str = "utf8",
    route: str = "auto",
    resume_run_id: str | None = None,
    poll_timeout: float = 3600.0,
    chunk_rows: int = 10_000,
) -> Any:
    """Validate or enrich places from files into DuckDB, spending the fewest credits.

    Returns the run summary as a dict (also published as a markdown artifact); a run that
    did not complete returns a Failed state carrying the same dict, with its exit code.
    """
    started = datetime.now(UTC)
    db_path = Path(db)
    try:
        settings = load_settings()
        options = run_options(
            mode=mode,
            attributes=attributes,
            include_summary=include_summary,
            max_credits=max_credits,
            max_age=max_age,
            force=force,
            mapping=mapping,
            encoding=encoding,
            route=route,
            chunk_rows=chunk_rows,
        )
        with (
            connect(db_path) as con,
            open_target(
                api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
            ) as target,
        ):
            if settings.uses_sandbox:
                print(f"placeflow: no PLACEFLOW_API_KEY set; using the {target.label}")
            with target.client() as api:
                try:
                    run_id, kind = _open(con, api, target, db, inputs, resume_run_id, options)
                except runner.BudgetRefused as exc:
                    refused = finish(con, None, exc.run_id, started=started).as_dict()
                    return Failed(
                        message=str(exc),
                        data={**refused, "exit_code": EXIT_REFUSED, "message": str(exc)},
                    )
                ctx = RunContext(
                    con=con,
                    api=api,
                    run_id=run_id,
                    kind=kind,
                    workdir=runner.workdir_for(db_path, run_id),
                    poller=JobPoller(api, floor=1.0, timeout=poll_timeout),
                )
                exit_code = EXIT_OK
                _ACTIVE[run_id] = ctx
                try:
                    _execute(ctx)
                except InsufficientCredits as exc:
                    runner.interrupted(con, run_id, exc)
                    exit_code = EXIT_REFUSED
                finally:
                    summary = account_task(run_id, started)
                    del _ACTIVE[run_id]
    except (InputError, WarehouseBusy, PlaceflowError, LookupError, ValueError) as exc:
        usage = isinstance(exc, InputError | LookupError | ValueError)
        code = EXIT_USAGE if usage else EXIT_FAILED
        return Failed(
            message=str(exc), data={"status": "failed", "message": str(exc), "exit_code": code}
        )
    create_markdown_artifact(
        key="place-refresh-summary",
        markdown=markdown_summary(summary),
        description=f"placeflow run {summary.run_id}",
    )
    data = {**summary.as_dict(), "exit_code": exit_code or exit_code_for(summary.status)}
    if data["exit_code"] != EXIT_OK:
        return Failed(message=summary.message or summary.status, data=data)
    return data


def _open(
    con: Any,
    api: Any,
    target: Target,
    db: str,
    inputs: list[str] | None,
    resume_run_id: str | None,
    options: RunOptions,
) -> tuple[str, JobKind]:
    """Resume the named (or an unfinished identical) run, or prepare and open a new one."""
    if resume_run_id:
        row = runner.load_run(con, resume_run_id)
        return row.run_id, row.options.mode
    same = runner.unfinished_run(con, runner.fingerprint(inputs or [], options))
    if same:
        return same, options.mode
    _OPEN[db] = con
    try:
        prepared = prepare_task(inputs or [], options, db, None)
    finally:
        del _OPEN[db]
    if prepared.counts.to_send:  # the rate card is worth a request only when there is work
        prepared = replace(
            prepared, estimate=estimate(prepared.counts.to_send, options, api.pricing())
        )
    run_id = runner.start(con, api, prepared, target=target.label, key_hint=api.key_hint)
    return run_id, options.mode
