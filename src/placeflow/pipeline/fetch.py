"""Fetch stage: a job that ended is recorded, and its result file downloaded and verified.

The download follows the job's presigned URL (no API key), checks sha256 and size while the
bytes stream in, and keeps the file under the run's work folder; only then is it recorded on
the chunk and handed to load, with the line count the job reported. The gzip stream and that
line count are proved where the file is decompressed anyway: by load's one read of it, which
writes nothing unless both hold.

A job that failed (or was cancelled) after processing rows and publishes their file is loaded
like any other: those rows may be billed, and are not sent again. One that ended with rows
processed and shows no file even after the poller waited for it is held, its hold kept, for a
resume to fetch. A job with nothing to load (failed, or cancelled before any row) ends here,
its hold released.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from placeflow.api.client import PlaceApiClient
from placeflow.api.download import download_result
from placeflow.api.errors import ResultUnavailable
from placeflow.api.models import JobStatus
from placeflow.events import Emit, FileVerified, Note
from placeflow.state.records import Chunk
from placeflow.state.runstate import RunState

Billing = Literal["job", "sync"]


@dataclass(frozen=True)
class Fetched:
    """A chunk's verified result file, ready to load."""

    chunk_no: int
    path: Path
    ref: str
    billing: Billing
    held: int
    partial: bool
    lines: int | None = None
    """How many lines the service says the file holds (unknown for a file found on disk)."""


def fetch(
    api: PlaceApiClient, state: RunState, status: JobStatus, *, workdir: Path, emit: Emit
) -> Fetched | None:
    """Record a job's end; download and verify its results when it has any (else None)."""
    chunk_no = state.chunk_of(status.batch_id)
    chunk = state.chunk(chunk_no)
    timed_out = chunk.status == "timed_out"
    if status.files_pending:
        # Rows processed, so billed, and no file shown yet (the poller waited for it): the
        # chunk keeps its hold and waits, ended and not loaded, for a resume to look again.
        # Ending it without a result would send its places again, and pay for them twice.
        why = (
            f"job {status.batch_id} is {status.status} with rows processed and shows no result"
            f" file yet; `placeflow resume {state.run_id}` looks for it again (with"
            " --resend-uncertain, it sends the chunk's places again, which may pay twice)"
        )
        state.awaiting_file(
            chunk_no, "completed" if status.status == "completed" else "cancelled", why
        )
        raise ResultUnavailable(why, batch_id=status.batch_id)
    if not status.results or not status.results.files:
        # Nothing to load: the job failed, or was cancelled, before it processed a row. Either
        # way the chunk has ended (a timed-out one stays marked so), its hold given back.
        state.ended_without_result(
            chunk_no,
            status="timed_out" if timed_out else "failed",
            ref=status.batch_id,
            rows=chunk.rows,
            error=status.error or _no_result(chunk, status),
            error_code=status.error_code or ("TIMED_OUT" if timed_out else "NO_RESULT"),
            why=f"job {status.status}: nothing processed is charged",
        )
        emit(Note(f"chunk {chunk_no}: job {status.batch_id} {status.status}: {status.error}"))
        return None
    if status.status == "completed":
        # Also a job that finished on its own just as placeflow gave up waiting for it.
        state.ended(chunk_no, "completed")
    elif status.status == "failed" and not timed_out:
        # A job that failed part way and published what it processed: those rows may be
        # billed, so they are loaded like a cancelled job's, never sent again; the rest are
        # the next run's, the chunk counted failed (its error kept; a timed-out one's too).
        state.ended(
            chunk_no,
            "cancelled",
            error=status.error or f"job {status.batch_id} failed part way",
            error_code=status.error_code or "FAILED",
        )
        emit(Note(f"chunk {chunk_no}: job {status.batch_id} failed part way: {status.error}"))
    elif not timed_out:
        state.ended(chunk_no, "cancelled")
    verified = download_result(api, status, workdir / f"chunk-{chunk_no:05d}", check_content=False)
    state.result_file(
        chunk_no, path=str(verified.path), sha256=verified.sha256, size=verified.size_bytes
    )
    emit(FileVerified(chunk_no, str(verified.path), verified.sha256, verified.lines))
    return Fetched(
        chunk_no,
        verified.path,
        status.batch_id,
        "job",
        held=state.held(chunk_no),
        partial=status.status != "completed",
        lines=verified.lines,
    )


def on_disk(state: RunState, chunk: Chunk) -> Fetched | None:
    """A chunk's result file when it is still on disk with the sha256 recorded for it."""
    if not chunk.result_path or not chunk.result_sha256:
        return None
    path = Path(chunk.result_path)
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != chunk.result_sha256:
        return None
    job = chunk.route == "job"
    return Fetched(
        chunk.chunk_no,
        path,
        chunk.batch_id or f"sync-{chunk.chunk_no}",
        "job" if job else "sync",
        held=state.held(chunk.chunk_no) if job else 0,
        partial=chunk.status == "cancelled",
    )


def _no_result(chunk: Chunk, status: JobStatus) -> str:
    if chunk.status == "timed_out":
        return "timed out and cancelled by placeflow before any row was processed"
    return f"job ended {status.status} without a result file"
