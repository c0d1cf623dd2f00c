"""The sandbox's bulk jobs and their result files, on top of its core state.

Submissions hold credits and honour Idempotency-Key (spec rule 5); status polls advance the
key's jobs on the sandbox clock and presign a fresh URL for each finished file; downloads are
served from the second origin without a key and refused once the URL has expired.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from placeflow.api.limits import gc_paused
from placeflow.api.models import EnrichJobSubmit, ValidateJobSubmit
from placeflow.emulator.core import (
    MAX_IDEMPOTENCY_KEY,
    CoreBackend,
    IdempotencyRecord,
    KeyState,
)
from placeflow.emulator.jobs import Job
from placeflow.emulator.ledger import InsufficientCredits, row_identity
from placeflow.emulator.responses import (
    Reply,
    ServiceError,
    error_response,
    http_validation_error,
    parse_body,
)
from placeflow.fields import JobKind

__all__ = ["KeyState", "SandboxBackend", "place_dicts"]


def place_dicts(pois: Sequence[BaseModel]) -> list[dict[str, Any]]:
    """Each parsed place as the dict `model_dump()` would make, without its copying: the
    request models are flat (every field a str, number, bool, None or list of str), so a
    model's own field dict is that dict already, at a tenth of the cost for 10,000 rows."""
    return [poi.__dict__ for poi in pois]


class SandboxBackend(CoreBackend):
    """The whole sandbox state: the core's keys, limits and credits, plus bulk jobs."""

    keep_job: Callable[[Job], None] | None = None
    """Keeps a new job's places where a sandbox started again finds them (`emulator.keep`)."""

    # --- bulk jobs --------------------------------------------------------------------

    def submit_job(self, state: KeyState, kind: JobKind, raw: bytes, idem_key: str | None) -> Reply:
        rid, now = self.next_id("req"), self.clock.now()
        if idem_key is not None and not (
            0 < len(idem_key) <= MAX_IDEMPOTENCY_KEY
            and idem_key.isprintable()
            and idem_key.isascii()
        ):
            raise ServiceError(
                400,
                {
                    "detail": {
                        "error": "invalid Idempotency-Key header: use 1 to 255 printable "
                        "ASCII characters",
                        "error_code": "INVALID_IDEMPOTENCY_KEY",
                    }
                },
            )
        model: type[ValidateJobSubmit | EnrichJobSubmit] = (
            ValidateJobSubmit if kind == "validate" else EnrichJobSubmit
        )
        with gc_paused():  # 10,000 acyclic models, let go before the collector runs again
            req = parse_body(model, raw, request_id=rid, now=now)
            # The body as parsed, not as spelled: key order, spacing and aliases do not make
            # it new work.
            body_hash = hashlib.sha256(req.model_dump_json().encode()).hexdigest()
            pois = place_dicts(req.pois)
            del req
        if kind == "enrich":
            self.require_entitlement(state, "enrichment")
        with self.lock:
            self._advance(state, now)
            record = state.idempotency.get(idem_key) if idem_key else None
            if record is not None and self._replayable(record, now):
                if record.body_hash != body_hash:
                    raise error_response(
                        409,
                        "Idempotency-Key was already used with a different body; "
                        "use a new key for new work",
                        "IDEMPOTENCY_CONFLICT",
                        request_id=rid,
                        now=now,
                        detail={"idempotency_key": idem_key, "batch_id": record.batch_id},
                    )
                self.replays += 1
                return Reply(200, record.response, {"Idempotent-Replayed": "true"})
            batch_id = self.next_id("job")
            fate, refuse_file = self.faults.job_fate()
            try:
                state.account.hold(len(pois), batch_id, now)
            except InsufficientCredits as exc:
                raise self.insufficient(exc, rid) from None
            job = Job(
                batch_id=batch_id,
                key=state.spec.key,
                kind=kind,
                pois=pois,
                content_hash=body_hash,
                created_at=now,
                fate=fate,
                held=len(pois),
                refuse_file=refuse_file or batch_id in self.faults.config.refuse_file_batches,
                row_ids=[row_identity(kind, p) for p in pois],
            )
            if state.submitted[body_hash]:
                self.duplicate_submissions += 1
            state.submitted[body_hash] += 1
            self.jobs[batch_id] = job
            if self.keep_job is not None:
                self.keep_job(job)
            state.scheduler.jobs.append(job)
            self._advance(state, now)
            self._prepare(state, job, now)
            response = {
                "batch_id": batch_id,
                "type": kind,
                "status": job.status,
                "created_at": self.stamp(job.created_at),
                "total_items": job.total,
                **self._eta(state, job, now),
            }
            if idem_key:
                state.idempotency[idem_key] = IdempotencyRecord(body_hash, batch_id, response, now)
        return Reply(200, response)

    def _prepare(self, state: KeyState, job: Job, now: float) -> None:
        """Render the file of a job that will run for a while in the background, so that it is
        ready when the job completes (a job that ends at once is rendered as it ends)."""
        if self.config.rows_per_second is None or job.terminal or job.fate in ("fail", "stall"):
            return
        start = state.scheduler.start_of(job, now)
        if start is not None:
            job.prepare(start, self.settings)

    def _replayable(self, record: IdempotencyRecord, now: float) -> bool:
        retention = self.faults.config.idempotency_retention_seconds
        if retention is None:
            retention = self.config.idempotency_retention_seconds
        retained = now - record.created_at < retention
        job = self.jobs.get(record.batch_id)
        return (
            retained
            and job is not None
            and job.status != "cancelled"
            and not self._forgotten(job, now)
        )

    def _eta(self, state: KeyState, job: Job, now: float) -> dict[str, Any]:
        """The job's eta, told truly unless `eta_factor` makes it wrong by that factor."""
        eta = state.scheduler.eta(job, now) * self.faults.config.eta_factor
        return {"eta_seconds": int(-(-eta // 1)), "eta_completion_at": self.stamp(now + eta)}

    def find_job(self, state: KeyState, batch_id: str) -> Job:
        if not (batch_id.startswith("job_") and len(batch_id) == 28):
            raise http_validation_error(
                ["path", "batch_id"],
                "batch_id must look like job_<24 hex digits>",
                "value_error",
                batch_id,
            )
        job = self.jobs.get(batch_id)
        now = self.clock.now()
        if job is None or job.key != state.spec.key or self._forgotten(job, now):
            raise _job_not_found(batch_id, now)
        return job

    def _forgotten(self, job: Job, now: float) -> bool:
        """Whether the job ended longer than `job_retention_seconds` ago (or was forgotten)."""
        retention = self.faults.config.job_retention_seconds
        if job.forgotten:
            return True
        if retention is None or not job.terminal or job.completed_at is None:
            return False
        return now - job.completed_at >= retention

    def forget_job(self, batch_id: str) -> None:
        """The service forgets a job, as if its retention had run out: its job endpoints answer
        404 from now on; what it billed stays billed (tests: docs/spec-readings.md, 18)."""
        with self.lock:
            self.jobs[batch_id].forgotten = True

    def job_status(self, state: KeyState, batch_id: str) -> Reply:
        with self.lock:
            now = self.clock.now()
            self._advance(state, now)
            job = self.find_job(state, batch_id)
            job.status_reads += 1
            if job.status_reads <= self.faults.config.unseen_job_reads:
                raise _job_not_found(batch_id, now)
            return Reply(200, self._status_body(state, job, now))

    def _finalizing(self, job: Job, now: float) -> bool:
        """Shown as `finalizing` (a status the spec never names): processed, not yet completed."""
        wait = self.faults.config.finalizing_seconds
        return (
            wait > 0
            and job.status == "completed"
            and job.completed_at is not None
            and now < job.completed_at + wait
        )

    def _parts(self, job: Job) -> list[tuple[bytes, str]] | None:
        """The ended job's result split into `result_parts` files of consecutive lines (None:
        one file, the default)."""
        n = self.faults.config.result_parts
        if n <= 1:
            return None
        if job.parts is None:
            lines = gzip.decompress(job.render(self.settings).body).splitlines(keepends=True)
            size = max(1, -(-len(lines) // n))
            bodies = [
                gzip.compress(b"".join(lines[i : i + size]), compresslevel=1, mtime=0)
                for i in range(0, len(lines), size)
            ]
            job.parts = [(b, hashlib.sha256(b).hexdigest()) for b in bodies]
        return job.parts

    def _results_late(self, job: Job) -> bool:
        """Ended, and its files not yet shown to this read (`results_late_reads`)."""
        late = self.faults.config.results_late_reads
        if not late:
            return False
        job.reads_ended += 1
        return job.reads_ended <= late

    def _status_body(self, state: KeyState, job: Job, now: float) -> dict[str, Any]:
        failed = 0
        results = None
        finalizing = self._finalizing(job, now)
        if finalizing or (job.terminal and job.processed and self._results_late(job)):
            failed = job.render(self.settings).failed
        elif job.terminal and job.processed:
            rf = job.render(self.settings)
            failed = rf.failed
            expires = now + self.config.url_ttl_seconds
            parts = self._parts(job) or [(rf.body, rf.sha256)]
            results = {
                "format": "jsonl.gz",
                "total_items": rf.rows,
                "files": [
                    {
                        "url": self.presign(
                            job.batch_id, expires, part=i if len(parts) > 1 else None
                        ),
                        "size_bytes": len(body),
                        "sha256": sha256,
                        "expires_at": self.stamp(expires),
                    }
                    for i, (body, sha256) in enumerate(parts)
                ],
            }
        elif job.processed:
            failed = job.failed_before(job.processed, self.settings)
        body: dict[str, Any] = {
            "batch_id": job.batch_id,
            "type": job.kind,
            "status": "finalizing" if finalizing else job.status,
            "created_at": self.stamp(job.created_at),
            "total_items": job.total,
            "started_at": self.stamp(job.started_at) if job.started_at is not None else None,
            "completed_at": (
                self.stamp(job.completed_at)
                if job.completed_at is not None and not finalizing
                else None
            ),
            "progress": {
                "processed": job.processed,
                "succeeded": job.processed - failed,
                "failed": failed,
            },
            **self._eta(state, job, now),
            "results": results,
            "error": job.error,
            "error_code": job.error_code,
        }
        return body

    def cancel_job(self, state: KeyState, batch_id: str) -> Reply:
        with self.lock:
            now = self.clock.now()
            self._advance(state, now)
            job = self.find_job(state, batch_id)
            cancelled = state.scheduler.cancel(job, now)
            if cancelled and not job.processed:
                job.forget_prepared()  # no file to serve
            if cancelled:
                self._settle(state, job)
                self._advance(state, now)
            message = (
                f"cancelled; {job.processed} processed rows stay billed and downloadable"
                if cancelled
                else f"job is already {job.status}; nothing changed"
            )
            body = {
                "batch_id": batch_id,
                "status": job.status,
                "cancelled": cancelled,
                "message": message,
            }
        return Reply(200, body)

    def refuse_file(self, batch_id: str) -> None:
        """Make the file origin refuse this job's result file (403) from now on."""
        with self.lock:
            self.jobs[batch_id].refuse_file = True

    # --- result files -----------------------------------------------------------------

    def presign(self, batch_id: str, expires: float, *, part: int | None = None) -> str:
        expires_ms = int(expires * 1000)
        signed = _signed(batch_id, str(expires_ms), None if part is None else str(part))
        sig = hmac.new(self._secret, signed.encode(), "sha256").hexdigest()
        path = f"/results/{batch_id}/result.jsonl.gz"
        query = f"expires={expires_ms}" + ("" if part is None else f"&part={part}")
        return f"{self.files_url}{path}?{query}&sig={sig[:32]}"

    def download(
        self, batch_id: str, expires: str, sig: str, carried_key: bool, part: str | None = None
    ) -> Reply:
        with self.lock:
            self.downloads["total"] += 1
            if carried_key:
                self.downloads["with_api_key"] += 1
            signed = _signed(batch_id, expires, part)
            want = hmac.new(self._secret, signed.encode(), "sha256").hexdigest()
            job = self.jobs.get(batch_id)
            if job is None or not hmac.compare_digest(want[:32], sig) or not expires.isdigit():
                self.downloads["refused"] += 1
                return Reply(
                    403, {"error": "signature does not match", "error_code": "ACCESS_DENIED"}
                )
            first = job.downloads == 0
            job.downloads += 1
            if job.refuse_file:
                self.downloads["refused"] += 1
                self.downloads["refused_forever"] += 1
                return Reply(403, {"error": "access denied", "error_code": "ACCESS_DENIED"})
            mangle = self.faults.download_fault(first)
            if int(expires) / 1000 <= self.clock.now() or mangle == "expire":
                self.downloads["refused"] += 1
                self.downloads["expired"] += 1
                return Reply(403, {"error": "request has expired", "error_code": "URL_EXPIRED"})
            assert job.result is not None
            body = job.result.body
            if part is not None:
                parts = job.parts or []
                if not part.isdigit() or int(part) >= len(parts):
                    self.downloads["refused"] += 1
                    return Reply(404, {"error": "no such object", "error_code": "NOT_FOUND"})
                body = parts[int(part)][0]
            if mangle == "truncate":
                self.downloads["truncated"] += 1
                body = body[: len(body) // 2]
            elif mangle == "corrupt":
                self.downloads["corrupted"] += 1
                mid = len(body) // 2
                body = body[:mid] + bytes([body[mid] ^ 0xFF]) + body[mid + 1 :]
            self.downloads["served"] += 1
        return Reply(200, None, {"Content-Type": "application/gzip"}, raw=body)


def _signed(batch_id: str, expires: str, part: str | None) -> str:
    """What a result URL's signature covers: the job, the expiry, and the part when split."""
    return f"{batch_id}:{expires}" if part is None else f"{batch_id}:{expires}:{part}"


def _job_not_found(batch_id: str, now: float) -> ServiceError:
    """The 404 of a job this key's service does not know (or does not show yet)."""
    return error_response(404, f"job {batch_id} not found", "NOT_FOUND", now=now)
