"""The sandbox's core state and its synchronous place and account operations, as plain Python.

Every operation takes a resolved key and a raw body and returns a `Reply`, or raises a
`ServiceError` carrying the service's error reply. One lock guards all state: the sandbox is a
correctness instrument first, and a few thousand requests a second is far above any key's limit.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from placeflow.api.models import (
    EnrichBatchRequest,
    POIEnrichRequest,
    POIValidateRequest,
)
from placeflow.emulator import synth
from placeflow.emulator.faults import FaultPlan
from placeflow.emulator.jobs import Job, JobScheduler
from placeflow.emulator.ledger import CreditAccount, InsufficientCredits, row_identity
from placeflow.emulator.pricing import pricing_card
from placeflow.emulator.ratelimit import KeyRateLimiter
from placeflow.emulator.responses import (
    CHECKOUT_PATH,
    Reply,
    ServiceError,
    error_response,
    gateway_error,
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


class CoreBackend:
    """Keys, limits, credits and the synchronous endpoints; `SandboxBackend` adds bulk jobs."""

    def __init__(self, config: SandboxConfig, *, files_url: str, base_url: str) -> None:
        self.config = config
        self.files_url = files_url.rstrip("/")
        self.base_url = base_url.rstrip("/")
        self.clock = config.clock or SystemClock()
        self.lock = threading.RLock()
        self._secret = hashlib.sha256(f"sandbox-url-secret:{config.seed}".encode()).digest()
        self._instance = secrets.token_hex(8)
        """Drawn anew by every sandbox, so that no two sandboxes give out the same ids."""
        self.generation = 0
        """How many times the state was reset (a kept state starts again with it)."""
        self.reset()

    # --- lifecycle and control --------------------------------------------------------

    def reset(self) -> None:
        """Forget all jobs, charges and counts; keys start again from their configured credits."""
        with self.lock:
            now = self.clock.now()
            self.faults = FaultPlan(self.config.faults)
            self.settings = self._synth_settings(self.config.faults)
            self.keys: dict[str, KeyState] = {}
            for spec in self.config.keys:
                self.add_key(spec, now=now)
            self.jobs: dict[str, Job] = {}
            self.request_counts: dict[str, Counter[str]] = {}
            self.downloads: Counter[str] = Counter()
            self.duplicate_submissions = 0
            self.replays = 0
            self.internal_errors: list[str] = []
            self._serial = 0
            self.generation += 1

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

    def _synth_settings(self, faults: FaultConfig) -> synth.SynthSettings:
        return synth.SynthSettings(
            seed=self.config.seed,
            epoch=self.config.epoch,
            fail_rate=self.config.fail_rate,
            null_status_rate=faults.null_status_rate,
            bill_null_status=faults.bill_null_status,
            social_value_shape=faults.social_value_shape,
            unknown_fields=faults.unknown_fields,
            nul_in_phone_rate=faults.nul_in_phone_rate,
        )

    def set_faults(self, config: FaultConfig) -> None:
        with self.lock:
            self.faults = FaultPlan(config)
            self.settings = self._synth_settings(config)

    def stamp(self, t: float) -> str:
        """A timestamp as the service writes it: by its own clock, skewed if so configured."""
        return iso(t + self.faults.config.clock_skew_seconds)

    def set_available(self, key: str, available: int) -> None:
        """Make a key's spendable balance `available` now (credits running out mid-run)."""
        with self.lock:
            self.keys[key].account.set_balance(available)

    def next_id(self, prefix: str) -> str:
        with self.lock:
            self._serial += 1
            ident = f"{self.config.seed}:{self._instance}:{prefix}:{self._serial}"
            digest = hashlib.sha256(ident.encode())
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
                state.account.bill_rows([row_identity("validate", req.model_dump())])
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
                state.account.bill_rows([row_identity("enrich", poi)])
        return Reply(200, result)

    def enrich_batch(self, state: KeyState, raw: bytes) -> Reply:
        rid, now = self.next_id("req"), self.clock.now()
        req = parse_body(EnrichBatchRequest, raw, request_id=rid, now=now)
        self.require_entitlement(state, "enrichment")
        with self.lock:
            self._require(state, len(req.pois), rid)
            pois = [p.model_dump() for p in req.pois]
            results = [
                synth.enrich_outcome(p, settings=self.settings, now=iso(now), request_id=rid)
                for p in pois
            ]
            ok = sum(1 for r in results if r["success"])
            state.account.charge(ok, rid, now)
            billed = zip(pois, results, strict=True)
            state.account.bill_rows(row_identity("enrich", p) for p, r in billed if r["success"])
        stats = {"total": len(results), "successful": ok, "failed": len(results) - ok}
        body = {
            "success": True,
            "results": results,
            "stats": stats,
            "enrichment_timestamp": iso(now),
        }
        return Reply(200, body)

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
        if billable:
            state.account.bill_rows(job.billed_rows(self.settings))
        job.settled = True

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
                "key_created_at": self.stamp(state.created_at),
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
                "reset_date": self.config.usage_reset_date or self.stamp(now)[:8] + "01",
                "period": "monthly",
                "status": spec.status,
                "validation_timestamp": self.stamp(now),
            }
        return Reply(200, body)

    def pricing(self) -> Reply:
        return Reply(200, pricing_card(self.base_url), {"Cache-Control": "public, max-age=300"})

    # --- inspection -------------------------------------------------------------------

    def ledger(self) -> dict[str, Any]:
        """What each key was billed, per request or job (its ref) and per row billed more than
        once: GET /_sandbox/ledger."""
        with self.lock:
            now = self.clock.now()
            for state in self.keys.values():
                self._advance(state, now)
            return {
                s.spec.hint: {
                    "credits_by_ref": s.account.credits_by_ref(),
                    "rows_billed": sum(s.account.rows_billed.values()),
                    "rows_billed_twice": {
                        row: s.account.rows_billed[row] for row in s.account.rows_billed_twice()
                    },
                }
                for s in self.keys.values()
            }

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
                        "billed": {
                            "refs": len(s.account.charges_by_ref()),
                            "rows": sum(s.account.rows_billed.values()),
                            "distinct_rows": len(s.account.rows_billed),
                            "rows_billed_twice": len(twice := s.account.rows_billed_twice()),
                            "rows_billed_twice_sample": twice[:20],
                        },
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
                        "refused_forever",
                    )
                },
                "duplicate_submissions": self.duplicate_submissions,
                "idempotent_replays": self.replays,
                "internal_errors": len(self.internal_errors),
                "last_internal_error": self.internal_errors[-1] if self.internal_errors else None,
                "jobs": {"created": len(self.jobs), "by_status": dict(by_status)},
                "files": {
                    "rendered": sum(job.result is not None for job in self.jobs.values()),
                    "prepared_ahead": sum(job.prepared_ahead for job in self.jobs.values()),
                },
            }
