"""The sandbox's state and the place and account operations, as plain Python.

Every operation takes a resolved key and a raw body and returns a `Reply`, or raises a
`ServiceError` carrying the service's error reply. One lock guards all state: the sandbox is a
correctness instrument first, and a few thousand requests a second is far above any key's limit.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from placeflow.api.models import (
    EnrichBatchRequest,
    EnrichJobSubmit,
    JobKind,
    POIEnrichRequest,
    POIValidateRequest,
    ValidateJobSubmit,
)
from placeflow.emulator import synth
from placeflow.emulator.faults import FaultPlan
from placeflow.emulator.jobs import Job, JobScheduler
from placeflow.emulator.ledger import CreditAccount, InsufficientCredits
from placeflow.emulator.pricing import pricing_card
from placeflow.emulator.ratelimit import KeyRateLimiter
from placeflow.emulator.responses import (
    CHECKOUT_PATH,
    Reply,
    ServiceError,
    error_response,
    gateway_error,
    http_validation_error,
    iso,
    parse_body,
)
from placeflow.emulator.settings import (
    TIER_LIMITS,
    FaultConfig,
    KeySpec,
    SandboxConfig,
    SystemClock,
)

MAX_IDEMPOTENCY_KEY = 255


@dataclass
class IdempotencyRecord:
    body_hash: str
    batch_id: str
    response: dict[str, Any]
    created_at: float


@dataclass
class KeyState:
    spec: KeySpec
    account: CreditAccount
    limiter: KeyRateLimiter
    scheduler: JobScheduler
    created_at: float
    idempotency: dict[str, IdempotencyRecord] = field(default_factory=dict)
    submitted: Counter[str] = field(default_factory=Counter)


class SandboxBackend:
    def __init__(self, config: SandboxConfig, *, files_url: str, base_url: str) -> None:
        self.config = config
        self.files_url = files_url.rstrip("/")
        self.base_url = base_url.rstrip("/")
        self.clock = config.clock or SystemClock()
        self.lock = threading.RLock()
        self._secret = hashlib.sha256(f"sandbox-url-secret:{config.seed}".encode()).digest()
        self.reset()

    # --- lifecycle and control --------------------------------------------------------

    def reset(self) -> None:
        """Forget all jobs, charges and counts; keys start again from their configured credits."""
        with self.lock:
            now = self.clock.now()
            self.settings = synth.SynthSettings(
                seed=self.config.seed, epoch=self.config.epoch, fail_rate=self.config.fail_rate
            )
            self.keys: dict[str, KeyState] = {}
            for spec in self.config.keys:
                self.add_key(spec, now=now)
            self.jobs: dict[str, Job] = {}
            self.faults = FaultPlan(self.config.faults)
            self.request_counts: dict[str, Counter[str]] = {}
            self.downloads: Counter[str] = Counter()
            self.duplicate_submissions = 0
            self.replays = 0
            self.internal_errors: list[str] = []
            self._serial = 0

    def add_key(self, spec: KeySpec, *, now: float | None = None) -> None:
        with self.lock:
            per_second, per_minute = TIER_LIMITS[spec.tier]
            self.keys[spec.key] = KeyState(
                spec=spec,
                account=CreditAccount(quota=spec.credits),
                limiter=KeyRateLimiter.for_limits(
                    per_second, per_minute, self.config.rate_window_scale
                ),
                scheduler=JobScheduler(self.config.rows_per_second, self.config.max_running_jobs),
                created_at=self.clock.now() if now is None else now,
            )

    def set_faults(self, config: FaultConfig) -> None:
        with self.lock:
            self.faults = FaultPlan(config)

    def set_available(self, key: str, available: int) -> None:
        """Make a key's spendable balance `available` now (credits running out mid-run)."""
        with self.lock:
            self.keys[key].account.set_balance(available)

    def next_id(self, prefix: str) -> str:
        with self.lock:
            self._serial += 1
            digest = hashlib.sha256(f"{self.config.seed}:{prefix}:{self._serial}".encode())
            return f"{prefix}_{digest.hexdigest()[:24]}"

    def record_internal_error(self, trace: str) -> None:
        with self.lock:
            self.internal_errors.append(trace)

    def count(self, route: str, status: int | str) -> None:
        with self.lock:
            self.request_counts.setdefault(route, Counter())[str(status)] += 1

    # --- auth and limits --------------------------------------------------------------

    def resolve_key(self, api_key: str | None) -> KeyState:
        """401 without a key; 403 for a key that is unknown, revoked or suspended."""
        if not api_key:
            raise error_response(
                401, "API key required", "AUTHENTICATION_ERROR", now=self.clock.now()
            )
        state = self.keys.get(api_key)
        if state is None or state.spec.status != "active":
            raise error_response(
                403, "Invalid or revoked API key", "AUTHENTICATION_ERROR", now=self.clock.now()
            )
        return state

    def admit(self, state: KeyState) -> None:
        with self.lock:
            retry_after = state.limiter.admit(self.clock.now())
        if retry_after is not None:
            raise gateway_error(
                429, "rate limit exceeded", headers={"Retry-After": str(retry_after)}
            )

    @staticmethod
    def require_entitlement(state: KeyState, entitlement: str) -> None:
        if entitlement not in state.spec.entitlements:
            if entitlement == "research":
                raise gateway_error(403, "endpoint not permitted for this key")
            raise gateway_error(403, f"missing entitlement: {entitlement}")

    def _require(self, state: KeyState, credits: int, request_id: str) -> None:
        try:
            state.account.require(credits)
        except InsufficientCredits as exc:
            raise self.insufficient(exc, request_id) from None

    def insufficient(self, exc: InsufficientCredits, request_id: str) -> ServiceError:
        return error_response(
            402,
            f"insufficient credits: this request needs {exc.needed} credits and "
            f"{exc.available} are available; add credits",
            "INSUFFICIENT_CREDITS",
            request_id=request_id,
            now=self.clock.now(),
            detail={
                "needed_credits": exc.needed,
                "available_credits": exc.available,
                "checkout_url": self.base_url + CHECKOUT_PATH,
            },
        )

    # --- synchronous place endpoints --------------------------------------------------

    def validate(self, state: KeyState, raw: bytes) -> Reply:
        rid, now = self.next_id("req"), self.clock.now()
        req = parse_body(POIValidateRequest, raw, request_id=rid, now=now)
        self.require_entitlement(state, "validation")
        with self.lock:
            self._require(state, 1, rid)
            result = synth.validate_outcome(
                req.model_dump(), settings=self.settings, now=iso(now), request_id=rid
            )
            if result["success"]:
                state.account.charge(1, rid, now)
        return Reply(200, result)

    def enrich(self, state: KeyState, raw: bytes) -> Reply:
        rid, now = self.next_id("req"), self.clock.now()
        req = parse_body(POIEnrichRequest, raw, request_id=rid, now=now)
        self.require_entitlement(state, "enrichment")
        poi = req.model_dump()
        if synth.unresolvable_coordinates(poi, settings=self.settings):
            raise error_response(
                422,
                "coordinates could not be resolved to a location; add an address or city",
                "VALIDATION_ERROR",
                request_id=rid,
                now=now,
            )
        with self.lock:
            self._require(state, 1, rid)
            result = synth.enrich_outcome(poi, settings=self.settings, now=iso(now), request_id=rid)
            if result["success"]:
                state.account.charge(1, rid, now)
        return Reply(200, result)

    def enrich_batch(self, state: KeyState, raw: bytes) -> Reply:
        rid, now = self.next_id("req"), self.clock.now()
        req = parse_body(EnrichBatchRequest, raw, request_id=rid, now=now)
        self.require_entitlement(state, "enrichment")
        with self.lock:
            self._require(state, len(req.pois), rid)
            results = [
                synth.enrich_outcome(
                    p.model_dump(), settings=self.settings, now=iso(now), request_id=rid
                )
                for p in req.pois
            ]
            ok = sum(1 for r in results if r["success"])
            state.account.charge(ok, rid, now)
        stats = {"total": len(results), "successful": ok, "failed": len(results) - ok}
        body = {
            "success": True,
            "results": results,
            "stats": stats,
            "enrichment_timestamp": iso(now),
        }
        return Reply(200, body)

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
        req = parse_body(model, raw, request_id=rid, now=now)
        if kind == "enrich":
            self.require_entitlement(state, "enrichment")
        body_hash = hashlib.sha256(
            json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
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
            pois = [p.model_dump() for p in req.pois]
            batch_id = self.next_id("job")
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
                fate=self.faults.job_fate(),
                held=len(pois),
            )
            if state.submitted[body_hash]:
                self.duplicate_submissions += 1
            state.submitted[body_hash] += 1
            self.jobs[batch_id] = job
            state.scheduler.jobs.append(job)
            self._advance(state, now)
            response = {
                "batch_id": batch_id,
                "type": kind,
                "status": job.status,
                "created_at": iso(job.created_at),
                "total_items": job.total,
                **self._eta(state, job, now),
            }
            if idem_key:
                state.idempotency[idem_key] = IdempotencyRecord(body_hash, batch_id, response, now)
        return Reply(200, response)

    def _replayable(self, record: IdempotencyRecord, now: float) -> bool:
        retained = now - record.created_at < self.config.idempotency_retention_seconds
        job = self.jobs.get(record.batch_id)
        return retained and job is not None and job.status != "cancelled"

    def _eta(self, state: KeyState, job: Job, now: float) -> dict[str, Any]:
        eta = state.scheduler.eta(job, now)
        return {"eta_seconds": int(-(-eta // 1)), "eta_completion_at": iso(now + eta)}

    def _advance(self, state: KeyState, now: float) -> None:
        """Move the key's jobs to `now` and settle the credits of those that ended."""
        for job in state.scheduler.advance(now):
            self._settle(state, job)

    def _settle(self, state: KeyState, job: Job) -> None:
        if job.settled:
            return
        billable = 0
        if job.processed:
            billable = job.render(self.settings).billable
        state.account.settle(job.held, billable, job.batch_id, job.completed_at or job.created_at)
        job.settled = True

    def find_job(self, state: KeyState, batch_id: str) -> Job:
        if not (batch_id.startswith("job_") and len(batch_id) == 28):
            raise http_validation_error(
                ["path", "batch_id"],
                "batch_id must look like job_<24 hex digits>",
                "value_error",
                batch_id,
            )
        job = self.jobs.get(batch_id)
        if job is None or job.key != state.spec.key:
            raise error_response(
                404, f"job {batch_id} not found", "NOT_FOUND", now=self.clock.now()
            )
        return job

    def job_status(self, state: KeyState, batch_id: str) -> Reply:
        with self.lock:
            now = self.clock.now()
            self._advance(state, now)
            job = self.find_job(state, batch_id)
            return Reply(200, self._status_body(state, job, now))

    def _status_body(self, state: KeyState, job: Job, now: float) -> dict[str, Any]:
        failed = 0
        results = None
        if job.terminal and job.processed:
            rf = job.render(self.settings)
            failed = rf.failed
            expires = now + self.config.url_ttl_seconds
            results = {
                "format": "jsonl.gz",
                "total_items": rf.rows,
                "files": [
                    {
                        "url": self.presign(job.batch_id, expires),
                        "size_bytes": len(rf.body),
                        "sha256": rf.sha256,
                        "expires_at": iso(expires),
                    }
                ],
            }
        elif job.processed:
            failed = job.failed_before(job.processed, self.settings)
        body: dict[str, Any] = {
            "batch_id": job.batch_id,
            "type": job.kind,
            "status": job.status,
            "created_at": iso(job.created_at),
            "total_items": job.total,
            "started_at": iso(job.started_at) if job.started_at is not None else None,
            "completed_at": iso(job.completed_at) if job.completed_at is not None else None,
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

    # --- result files -----------------------------------------------------------------

    def presign(self, batch_id: str, expires: float) -> str:
        expires_ms = int(expires * 1000)
        sig = hmac.new(self._secret, f"{batch_id}:{expires_ms}".encode(), "sha256").hexdigest()
        path = f"/results/{batch_id}/result.jsonl.gz"
        return f"{self.files_url}{path}?expires={expires_ms}&sig={sig[:32]}"

    def download(self, batch_id: str, expires: str, sig: str, carried_key: bool) -> Reply:
        with self.lock:
            self.downloads["total"] += 1
            if carried_key:
                self.downloads["with_api_key"] += 1
            want = hmac.new(self._secret, f"{batch_id}:{expires}".encode(), "sha256").hexdigest()
            job = self.jobs.get(batch_id)
            if job is None or not hmac.compare_digest(want[:32], sig) or not expires.isdigit():
                self.downloads["refused"] += 1
                return Reply(
                    403, {"error": "signature does not match", "error_code": "ACCESS_DENIED"}
                )
            if int(expires) / 1000 <= self.clock.now():
                self.downloads["refused"] += 1
                self.downloads["expired"] += 1
                return Reply(403, {"error": "request has expired", "error_code": "URL_EXPIRED"})
            assert job.result is not None
            body = job.result.body
            first = job.downloads == 0
            job.downloads += 1
            mangle = self.faults.download_fault(first)
            if mangle == "truncate":
                self.downloads["truncated"] += 1
                body = body[: len(body) // 2]
            elif mangle == "corrupt":
                self.downloads["corrupted"] += 1
                mid = len(body) // 2
                body = body[:mid] + bytes([body[mid] ^ 0xFF]) + body[mid + 1 :]
            self.downloads["served"] += 1
        return Reply(200, None, {"Content-Type": "application/gzip"}, raw=body)

    # --- account ----------------------------------------------------------------------

    def usage(self, state: KeyState) -> Reply:
        with self.lock:
            now = self.clock.now()
            self._advance(state, now)
            acct, spec = state.account, state.spec
            used = acct.charged + acct.held
            body = {
                "tier": spec.tier,
                "api_key_id": "key_" + hashlib.sha256(spec.key.encode()).hexdigest()[:16],
                "customer_id": "cus_"
                + hashlib.sha256(spec.customer_name.encode()).hexdigest()[:16],
                "key_hint": spec.hint,
                "key_created_at": iso(state.created_at),
                "customer_name": spec.customer_name,
                "quota_limit": acct.quota,
                "current_usage": used,
                "remaining": acct.available,
                "available": acct.available,
                "call_credit_hold": 30,
                "max_places": None,
                "places_used": None,
                "contact_email": "",
                "credits_per_field": 1,
                "credits_per_place": 1,
                "open_invoices": [],
                "percentage_used": round(100.0 * used / acct.quota, 4) if acct.quota else 100.0,
                "reset_date": iso(now)[:8] + "01",
                "period": "monthly",
                "status": spec.status,
                "validation_timestamp": iso(now),
            }
        return Reply(200, body)

    def pricing(self) -> Reply:
        return Reply(200, pricing_card(self.base_url), {"Cache-Control": "public, max-age=300"})

    # --- inspection -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        with self.lock:
            now = self.clock.now()
            for state in self.keys.values():
                self._advance(state, now)
            by_status = Counter(job.status for job in self.jobs.values())
            return {
                "requests": {route: dict(c) for route, c in sorted(self.request_counts.items())},
                "keys": {
                    key: {
                        "tier": s.spec.tier,
                        "credits": s.account.summary(),
                        "double_charged_refs": sorted(
                            ref for ref, n in s.account.charges_by_ref().items() if n > 1
                        ),
                        "peak_per_second": s.limiter.peak_per_second,
                        "peak_per_minute": s.limiter.peak_per_minute,
                        "rate_limited": s.limiter.rejected,
                    }
                    for key, s in self.keys.items()
                },
                "downloads": {
                    k: self.downloads[k]
                    for k in (
                        "total",
                        "served",
                        "with_api_key",
                        "refused",
                        "expired",
                        "truncated",
                        "corrupted",
                    )
                },
                "duplicate_submissions": self.duplicate_submissions,
                "idempotent_replays": self.replays,
                "internal_errors": len(self.internal_errors),
                "last_internal_error": self.internal_errors[-1] if self.internal_errors else None,
                "jobs": {"created": len(self.jobs), "by_status": dict(by_status)},
            }
