"""The sandbox's configuration: keys, pacing, faults and its clock. Plain values, no environment."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

Tier = Literal["free", "paid"]
KeyStatus = Literal["active", "revoked", "suspended"]

DEFAULT_API_KEY = "sk_sandbox_paid_0000000000000000"
"""The one key a sandbox started without options accepts: paid tier, all entitlements."""
DEFAULT_CREDITS = 1_000_000
ENTITLEMENTS: tuple[str, ...] = ("validation", "enrichment", "research")

TIER_LIMITS: dict[str, tuple[int, int]] = {"free": (5, 10), "paid": (10, 100)}
"""Requests per second and per minute, per the spec's Limits table."""


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to: jobs, holds and rate windows follow it exactly."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += max(0.0, seconds)

    def sleep(self, seconds: float) -> None:
        """Use as a client's `sleep` so that waiting moves sandbox time instead of real time."""
        self.advance(seconds)


@dataclass(frozen=True)
class KeySpec:
    key: str
    tier: Tier = "paid"
    credits: int = DEFAULT_CREDITS
    entitlements: tuple[str, ...] = ENTITLEMENTS
    status: KeyStatus = "active"
    customer_name: str = "Sandbox Customer"

    @property
    def hint(self) -> str:
        return self.key[-4:]


def parse_key_spec(text: str) -> KeySpec:
    """Parse `NAME:tier=free|paid:credits=N[:entitlements=a,b][:status=active]` (the CLI form)."""
    name, *options = text.split(":")
    if not name:
        raise ValueError(f"key spec {text!r} has no key name before the first ':'")
    values: dict[str, Any] = {}
    for option in options:
        opt, sep, value = option.partition("=")
        if not sep:
            raise ValueError(f"key option {option!r} is not of the form name=value")
        if opt == "tier":
            if value not in TIER_LIMITS:
                raise ValueError(f"tier must be free or paid, not {value!r}")
            values["tier"] = value
        elif opt == "credits":
            if not value.isdigit():
                raise ValueError(f"credits must be a whole number >= 0, not {value!r}")
            values["credits"] = int(value)
        elif opt == "entitlements":
            ents = tuple(e for e in value.split(",") if e)
            unknown = sorted(set(ents) - set(ENTITLEMENTS))
            if unknown:
                raise ValueError(f"unknown entitlement(s) {unknown}; known: {ENTITLEMENTS}")
            values["entitlements"] = ents
        elif opt == "status":
            if value not in ("active", "revoked", "suspended"):
                raise ValueError(f"status must be active, revoked or suspended, not {value!r}")
            values["status"] = value
        else:
            raise ValueError(f"unknown key option {opt!r} (tier, credits, entitlements, status)")
    return KeySpec(key=name, **values)


@dataclass(frozen=True)
class FaultConfig:
    """Failure modes, each a probability per matching request (0 = off), drawn from `seed`."""

    seed: int = 0
    error_500_rate: float = 0.0
    error_503_rate: float = 0.0
    maintenance_rate: float = 0.0
    extra_429_rate: float = 0.0
    drop_request_rate: float = 0.0
    drop_response_rate: float = 0.0
    slow_rate: float = 0.0
    slow_seconds: float = 2.0
    truncate_download_rate: float = 0.0
    corrupt_download_rate: float = 0.0
    expire_url_rate: float = 0.0
    """A file's first download finds its URL expired (as if fetched too late)."""
    job_fail_rate: float = 0.0
    job_stall_rate: float = 0.0
    retry_after_seconds: int = 1
    """Retry-After sent with injected 429s and 503s."""
    research_unavailable: bool = False
    """Deep research answers with every row abstained and nothing billed."""
    # --- the other readings of the spec (docs/spec-readings.md), all off by default --------
    clock_skew_seconds: float = 0.0
    """Every timestamp the service writes (created_at, expires_at, eta_completion_at, ...) is
    shifted by this many seconds: the service's clock runs ahead (or behind, negative)."""
    eta_factor: float = 1.0
    """eta_seconds and eta_completion_at report the true eta times this: 3 pessimistic,
    1/3 optimistic (a service whose eta ignores its load)."""
    finalizing_seconds: float = 0.0
    """A job whose rows are all processed shows status `finalizing` (a status the spec never
    names) for this long before `completed`, without results."""
    null_status_rate: float = 0.0
    """Share of successful enrich rows whose `status` object comes back with every value null
    (and no operational_status): the rows the spec's billing rule is ambiguous about."""
    bill_null_status: bool = True
    """Whether a bulk enrich row with only an all-null `status` is billed ("non-null status"
    read as the object, True) or not (read as its values, False)."""
    refuse_file_rate: float = 0.0
    """Share of jobs whose result file the file origin refuses (403) forever."""
    refuse_file_batches: tuple[str, ...] = ()
    """batch_ids whose result file is refused (403) forever."""
    idempotency_retention_seconds: float | None = None
    """How long an Idempotency-Key is remembered (overrides SandboxConfig's; the spec only
    says "retry promptly"): after it, a replay creates a second job."""
    sync_reset_after_rate: float = 0.0
    """Synchronous place calls (validate, enrich, enrich-batch) processed and billed, then the
    connection dropped before the answer: the answer is lost, the charge is not."""
    html_503_rate: float = 0.0
    """503 answered with an HTML page (a proxy's), not the service's JSON error body."""
    unknown_fields: bool = False
    """Responses carry fields and enum values the spec never names; result lines (job files,
    synchronous answers) too: at the top, inside status objects, and a status object of only
    such a field where the spec's answer has none; a deep-research row's `fields` an entry
    nobody asked for (`x_ext`, no status). Billing stays the spec's fields'."""
    job_fail_midway_rate: float = 0.0
    """Jobs that fail half way: processed rows billed and published, the rest never run."""
    counted_late_rate: float = 0.0
    """Share of keyed requests the service counts against the key's rate windows only
    `counted_late_seconds` after they were sent (a queue in front of its counter): the reading
    that a request counts when the service gets to it, not when it left the client."""
    counted_late_seconds: float = 5.0
    unseen_job_reads: int = 0
    """Each job's first N status reads (GET /v1/jobs/{batch_id}) answer 404 as if it did not
    exist: a read path behind the write path (what the service answers for an unknown
    batch_id is not shown)."""
    social_value_shape: str = "object"
    """The shape of instagram and tiktok values (not shown in the spec): `object` {url,
    handle} as facebook's; `url`, a plain string of the profile URL; `handle`, a plain string
    "@handle"."""
    job_retention_seconds: float | None = None
    """An ended job is forgotten this long after it ended: its job endpoints answer 404 (how
    long the service keeps jobs is not shown; by default, for ever)."""
    results_late_reads: int = 0
    """A job that ended answers its first N status reads after it ended with `results: null`:
    the status moves before the files are published (when they appear is not shown)."""
    nul_in_phone_rate: float = 0.0
    """Share of phone values that come back holding a NUL byte (JSON ``\\u0000``) inside the
    number: text a PostgreSQL export must make safe (docs/operations.md)."""
    result_parts: int = 1
    """A job's results are split into up to N files (`results.files[]`, consecutive lines in
    order, each its own gzip stream, URL, size and sha256): the spec's `files` is an array."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fault setting(s) {unknown}; known: {sorted(known)}")
        return cls(**{name: _coerce(name, value) for name, value in data.items()})

    @classmethod
    def from_pairs(cls, pairs: Sequence[str]) -> FaultConfig:
        """The CLI form, `name=value` each (``eta_factor=3``, ``unknown_fields=true``,
        ``refuse_file_batches=job_a,job_b``), each value read as its setting's type."""
        values: dict[str, str] = {}
        for pair in pairs:
            name, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"--fault takes name=value, not {pair!r}")
            values[name.strip()] = value.strip()
        return cls.from_dict(values)


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _coerce(name: str, value: Any) -> Any:
    """`value` as FaultConfig's setting `name` types it (strings from the CLI or JSON)."""
    default = getattr(FaultConfig(), name)
    if name in ("idempotency_retention_seconds", "job_retention_seconds"):
        return None if value in (None, "", "none") else float(value)
    if isinstance(default, bool):
        if isinstance(value, str):
            if value.lower() not in _TRUE + _FALSE:
                raise ValueError(f"{name} is true or false, not {value!r}")
            return value.lower() in _TRUE
        return bool(value)
    if isinstance(default, int):
        return int(float(value))
    if isinstance(default, float):
        return float(value)
    if isinstance(default, tuple):
        items = value.split(",") if isinstance(value, str) else value
        return tuple(str(v).strip() for v in items if str(v).strip())
    return value


@dataclass(frozen=True)
class SandboxConfig:
    keys: tuple[KeySpec, ...] = (KeySpec(key=DEFAULT_API_KEY),)
    seed: int = 0
    epoch: int = 0
    fail_rate: float = 0.01
    rows_per_second: float | None = None
    """Rows each running job processes per second; None finishes a job at submission."""
    max_running_jobs: int = 2
    """Jobs of one key that run at once; the rest wait queued."""
    rate_window_scale: float = 1.0
    """Multiplies both rate-limit windows (0.05 makes the minute window 3 s) for fast tests."""
    url_ttl_seconds: float = 900.0
    idempotency_retention_seconds: float = 86_400.0
    usage_reset_date: str | None = None
    """The usage's `reset_date` (YYYY-MM-DD; the spec does not say whether it is the last reset
    or the next): None shows the first of the current month, a date ahead plays the other
    reading."""
    faults: FaultConfig = field(default_factory=FaultConfig)
    clock: Clock | None = None
