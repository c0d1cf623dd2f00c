"""Carry out a planned run: submit, poll, fetch, verify and load each chunk, write-ahead.

Every step first reads the chunk's row in `jobs` and moves it one state on, committing before
and after each request that costs money:

    planned --POST (Idempotency-Key)--> submitted --poll--> completed|failed|cancelled
        --download + sha256--> (file on disk) --load (one transaction)--> loaded

A process killed anywhere resumes from the rows: a planned chunk is POSTed again with the same
key and body (the service replays it), a submitted one is polled, a completed one fetched
again, a loaded one left alone. Synchronous batches have no Idempotency-Key; one found
`submitted` on resume may have been charged, so it is sent again and counted as a possible
extra charge.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

from placeflow.api.download import download_result
from placeflow.api.errors import InsufficientCredits, JobTimedOut
from placeflow.api.models import TERMINAL_JOB_STATUSES, JobStatus
from placeflow.api.poller import PendingJob
from placeflow.pipeline.chunkstate import (
    Chunk,
    RunContext,
    chunk_body,
    chunk_of,
    chunk_requests,
    chunks,
    held_credits,
    record_credits,
    set_chunk,
)
from placeflow.pipeline.load import LoadInfo, load_result
from placeflow.warehouse import transaction

log = logging.getLogger("placeflow.execute")


# --- bulk jobs ------------------------------------------------------------------------------


def submit_chunk(ctx: RunContext, chunk: Chunk) -> str:
    """POST a planned chunk under its Idempotency-Key; store the batch_id and the hold at once."""
    assert chunk.idempotency_key is not None
    submission = ctx.api.submit_job_body(
        ctx.kind, chunk_body(ctx, chunk.chunk_no), idempotency_key=chunk.idempotency_key
    )
    batch_id = submission.batch_id
    job = submission.job
    if job.status not in TERMINAL_JOB_STATUSES and job.eta_seconds is not None:
        ctx.due[batch_id] = ctx.api.clock() + job.eta_seconds
    with transaction(ctx.con):
        set_chunk(
            ctx,
            chunk.chunk_no,
            batch_id=batch_id,
            status="submitted",
            submitted_at=ctx.now(),
            credits_held=chunk.rows,
        )
        if held_credits(ctx, chunk.chunk_no) == 0:  # once, however often the POST was retried
            record_credits(
                ctx,
                chunk.chunk_no,
                batch_id,
                "hold",
                chunk.rows,
                "1 credit per row held at submission",
            )
    verb = "re-attached to" if submission.replayed else "submitted"
    ctx.note(f"chunk {chunk.chunk_no}: {verb} job {batch_id} ({chunk.rows:,} rows)")
    return batch_id


def submit_all(ctx: RunContext) -> int:
    """Submit every planned job chunk; stop at the first 402 (the rest stay planned)."""
    submitted = 0
    for chunk in chunks(ctx, "planned"):
        if chunk.route != "job":
            continue
        try:
            submit_chunk(ctx, chunk)
        except InsufficientCredits as exc:
            ctx.note(f"chunk {chunk.chunk_no}: not submitted: {exc}")
            raise
        submitted += 1
    return submitted


def follow(ctx: RunContext) -> Iterator[JobStatus]:
    """Poll every submitted job with one poller, yielding each terminal status as it ends."""
    now = ctx.api.clock()
    pending = [
        PendingJob(c.batch_id, ctx.due[c.batch_id] - now if c.batch_id in ctx.due else None)
        for c in chunks(ctx, "submitted")
        if c.batch_id
    ]
    if not pending:
        return
    try:
        yield from ctx.poller.iter_follow(pending)
    except JobTimedOut as exc:
        for batch_id in exc.batch_ids:
            set_chunk(
                ctx,
                chunk_of(ctx, batch_id),
                status="timed_out",
                finished_at=ctx.now(),
                error=f"not finished after {exc.timeout:g} s; cancelled by placeflow",
                error_code="TIMED_OUT",
            )
        for batch_id in exc.batch_ids:
            # Cancelled, its processed rows stay billed and downloadable; or it ended on its
            # own just before the DELETE. Either way: settle what it has.
            status = ctx.api.job_status(batch_id)
            if status.terminal:
                yield status
                continue
            set_chunk(
                ctx,
                chunk_of(ctx, batch_id),
                error=f"not finished after {exc.timeout:g} s and could not be cancelled:"
                f" DELETE /v1/jobs/{batch_id} before running again",
            )
            ctx.note(f"job {batch_id} timed out and could not be cancelled")


def settle(ctx: RunContext, status: JobStatus) -> LoadInfo | None:
    """Record a job's end; fetch, verify and load its results when it has any."""
    chunk_no = chunk_of(ctx, status.batch_id)
    (chunk,) = [c for c in chunks(ctx) if c.chunk_no == chunk_no]
    if status.status == "failed" or not status.results or not status.results.files:
        # Nothing to load: the job failed, or was cancelled before it processed a row. Either
        # way the chunk has ended (a timed-out one stays marked so), its hold given back.
        with transaction(ctx.con):
            set_chunk(
                ctx,
                chunk_no,
                status="timed_out" if chunk.status == "timed_out" else "failed",
                finished_at=ctx.now(),
                error=status.error or chunk_error(chunk, status),
                error_code=status.error_code
                or ("TIMED_OUT" if chunk.status == "timed_out" else "NO_RESULT"),
                credits_charged=0,
                credits_released=chunk.rows,
            )
            record_credits(
                ctx,
                chunk_no,
                status.batch_id,
                "release",
                chunk.rows,
                f"job {status.status}: nothing processed is charged",
            )
        ctx.note(f"chunk {chunk_no}: job {status.batch_id} {status.status}: {status.error}")
        return None
    if status.status == "completed":
        # Also a job that finished on its own just as placeflow gave up waiting for it.
        set_chunk(
            ctx, chunk_no, status="completed", finished_at=ctx.now(), error=None, error_code=None
        )
    elif chunk.status != "timed_out":
        set_chunk(ctx, chunk_no, status="cancelled", finished_at=ctx.now())
    return fetch_and_load(ctx, chunk_no, status)


def chunk_error(chunk: Chunk, status: JobStatus) -> str:
    if chunk.status == "timed_out":
        return "timed out and cancelled by placeflow before any row was processed"
    return f"job ended {status.status} without a result file"


def fetch_and_load(ctx: RunContext, chunk_no: int, status: JobStatus) -> LoadInfo:
    """Download and verify a job's result file, then load it in one transaction."""
    dest = ctx.workdir / f"chunk-{chunk_no:05d}"
    verified = download_result(ctx.api, status, dest)
    set_chunk(
        ctx,
        chunk_no,
        result_path=str(verified.path),
        result_sha256=verified.sha256,
        result_size=verified.size_bytes,
    )
    held = held_credits(ctx, chunk_no)
    info = load_result(
        ctx.con,
        run_id=ctx.run_id,
        chunk_no=chunk_no,
        kind=ctx.kind,
        path=verified.path,
        billing="job",
        held=held,
        ref=status.batch_id,
        partial=status.status != "completed",
    )
    ctx.note(
        f"chunk {chunk_no}: loaded {info.rows:,} rows, {info.charged:,} credits charged,"
        f" {info.released:,} released"
    )
    return info


# --- synchronous batches ----------------------------------------------------------------------


def run_sync_chunk(ctx: RunContext, chunk: Chunk) -> LoadInfo:
    """Send one synchronous batch (enrich-batch of up to ten, or one validate) and load it."""
    uncertain = chunk.status == "submitted"
    if uncertain:
        ctx.note(f"chunk {chunk.chunk_no}: a previous attempt may have been charged; sending again")
    else:
        set_chunk(ctx, chunk.chunk_no, status="submitted", submitted_at=ctx.now())
    pois = chunk_requests(ctx, chunk.chunk_no)
    before = ctx.api.possible_extra_credits
    if ctx.kind == "enrich":
        batch = ctx.api.enrich_batch(pois, allow_double_charge=True)
        results = [r.model_dump(mode="json") for r in batch.results]
    else:
        results = [ctx.api.validate(pois[0], allow_double_charge=True).model_dump(mode="json")]
    extra = ctx.api.possible_extra_credits - before + (len(pois) if uncertain else 0)
    path = ctx.workdir / f"chunk-{chunk.chunk_no:05d}" / "sync.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in results).encode()
    data = gzip.compress(body, mtime=0)
    path.write_bytes(data)
    ref = results[0].get("request_id") or f"sync-{chunk.chunk_no}"
    set_chunk(
        ctx,
        chunk.chunk_no,
        status="completed",
        finished_at=ctx.now(),
        batch_id=None,
        result_path=str(path),
        result_sha256=hashlib.sha256(data).hexdigest(),
        result_size=len(data),
    )
    if extra:
        ctx.con.execute(
            "update runs set possible_extra_credits = possible_extra_credits + ? where run_id = ?",
            [extra, ctx.run_id],
        )
    return load_result(
        ctx.con,
        run_id=ctx.run_id,
        chunk_no=chunk.chunk_no,
        kind=ctx.kind,
        path=path,
        billing="sync",
        held=0,
        ref=str(ref),
    )


def _verified_on_disk(chunk: Chunk) -> Path | None:
    """The chunk's result file when it is still on disk with the sha256 recorded for it."""
    if not chunk.result_path or not chunk.result_sha256:
        return None
    path = Path(chunk.result_path)
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == chunk.result_sha256:
        return path
    return None


def resume_unloaded(ctx: RunContext) -> int:
    """Chunks that ended but were not loaded (a crash): load the verified file on disk, or
    fetch it again (a job) or send it again (a synchronous batch, counted as uncertain)."""
    resumed = 0
    for chunk in chunks(ctx, "completed", "cancelled"):
        path = _verified_on_disk(chunk)
        if path is not None:
            ref = chunk.batch_id or f"sync-{chunk.chunk_no}"
            load_result(
                ctx.con,
                run_id=ctx.run_id,
                chunk_no=chunk.chunk_no,
                kind=ctx.kind,
                path=path,
                billing="job" if chunk.route == "job" else "sync",
                held=held_credits(ctx, chunk.chunk_no),
                ref=ref,
                partial=chunk.status == "cancelled",
            )
        elif chunk.route == "job" and chunk.batch_id:
            settle(ctx, ctx.api.job_status(chunk.batch_id))
        else:
            set_chunk(ctx, chunk.chunk_no, status="submitted")
            continue
        resumed += 1
    return resumed


def execute_run(ctx: RunContext) -> None:
    """All steps in order, resuming from wherever the run's chunks stand."""
    resume_unloaded(ctx)
    for chunk in chunks(ctx, "planned", "submitted"):
        if chunk.route == "sync":
            run_sync_chunk(ctx, chunk)
    try:
        submit_all(ctx)
    finally:
        for status in follow(ctx):
            settle(ctx, status)
