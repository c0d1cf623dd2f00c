"""A key's rate limits kept by Prefect: global concurrency limits with slot decay, shared by
every flow run on every machine that talks to the same Prefect server.

The library's default gate (`placeflow.api.limiter.machine_limiter`) shares a key's windows
between the processes of one machine; under a Prefect server, a flow can hand the client this
gate instead. Each window (`count` requests per `seconds`) becomes one limit of `capacity`
slots that decay at `(count - capacity) / spacing` per second, so any span of the window's
length (plus its safety margin) grants at most `capacity + (count - capacity) = count`. Prefect
decays slots in whole steps from the limit's last update, so it grants at most that, often less.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass, replace

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import (
    GlobalConcurrencyLimitCreate,
    GlobalConcurrencyLimitUpdate,
)
from prefect.concurrency.sync import rate_limit
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from placeflow.api.limiter import RateGate
from placeflow.fields import RateLimits
from placeflow.runner.target import Target, shared_limiter
from placeflow.support.redact import Secret


def limit_names(base_url: str, api_key: Secret, limits: RateLimits) -> list[str]:
    """One limit name per window, from a digest of the service and the key (never the key)."""
    digest = hashlib.sha256(f"{base_url}|{api_key.reveal()}".encode()).hexdigest()[:16]
    return [f"placeflow-{digest}-{count}per{seconds:g}s" for count, seconds in limits.windows]


class PrefectRateGate:
    """A `RateGate` over Prefect's `rate_limit`: `acquire` takes a slot of every window's limit."""

    def __init__(
        self,
        limits: RateLimits,
        *,
        base_url: str,
        api_key: Secret,
        capacity: int = 1,
        timeout: float | None = 600.0,
    ) -> None:
        self.limits = limits
        self.names = limit_names(base_url, api_key, limits)
        self._capacity = capacity
        self._timeout = timeout
        self._lock = threading.Lock()
        self._blocked_until = float("-inf")
        self._ensure_limits()

    def _ensure_limits(self) -> None:
        """Create (or correct) each window's limit on the server. A limit already as wanted
        (every run's but the key's first) is only read: created again, the server logs the
        refusal as an error of its own, and updated, its slots' decay starts anew."""
        with get_client(sync_client=True) as client:
            for name, (count, seconds) in zip(self.names, self.limits.windows, strict=True):
                slots = max(1, min(self._capacity, count))
                decay = max(count - slots, 1) / self.limits.spacing(seconds)
                try:
                    have = client.read_global_concurrency_limit_by_name(name)
                except ObjectNotFound:
                    try:
                        client.create_global_concurrency_limit(
                            GlobalConcurrencyLimitCreate(
                                name=name, limit=slots, slot_decay_per_second=decay
                            )
                        )
                        continue
                    except ObjectAlreadyExists:  # another process made it meanwhile
                        have = client.read_global_concurrency_limit_by_name(name)
                if have.limit != slots or not math.isclose(have.slot_decay_per_second, decay):
                    client.update_global_concurrency_limit(
                        name,
                        GlobalConcurrencyLimitUpdate(limit=slots, slot_decay_per_second=decay),
                    )

    def acquire(self, *, urgent: bool = False) -> float:
        """Wait for a slot of every window (and any server-asked pause); the seconds waited.
        Prefect's limits have no queue to jump: `urgent` is taken as any request."""
        started = time.monotonic()
        pause = self.delay()
        if pause > 0:
            time.sleep(pause)
        rate_limit(self.names, occupy=1, timeout_seconds=self._timeout, strict=True)
        return time.monotonic() - started

    def delay(self) -> float:
        """Seconds of a server-asked pause still to run (Prefect's own wait is not known here)."""
        with self._lock:
            return max(0.0, self._blocked_until - time.monotonic())

    def defer(self, seconds: float) -> None:
        """Send nothing from this process for `seconds` (the server answered 429 or 503)."""
        with self._lock:
            self._blocked_until = max(self._blocked_until, time.monotonic() + seconds)

    def answered(self) -> None:
        """Nothing to move: a slot decays from when it was granted (Prefect keeps no stamps to
        move). The limits keep one request's margin (`count - 1` decay per window); the
        machine's limiter beside this gate (`BothGates`) counts this machine's requests from
        their answers."""


@dataclass(frozen=True)
class BothGates:
    """The machine's limiter, then the Prefect server's: a deployment's run keeps the key's
    limits with the analysts' runs on its machine (the file) and with the flow runs on other
    machines (the server)."""

    machine: RateGate
    server: RateGate

    def acquire(self, *, urgent: bool = False) -> float:
        return self.machine.acquire(urgent=urgent) + self.server.acquire(urgent=urgent)

    def delay(self) -> float:
        return max(self.machine.delay(), self.server.delay())

    def defer(self, seconds: float) -> None:
        self.machine.defer(seconds)
        self.server.defer(seconds)

    def answered(self) -> None:
        self.machine.answered()
        self.server.answered()


def gated(target: Target, *, server_url: str | None, sandbox: bool) -> Target:
    """`target` with this gate whenever a flow run runs under a Prefect server of its own
    (`server_url`, PREFECT_API_URL) and talks to a real service: a deployment's run on a
    worker, and an analyst's `placeflow run` on any machine (the CLI carries a run out as a
    flow run whenever a Prefect API is configured), so every run on every machine keeps the
    key's limits together. Otherwise the target as it is: the machine's limiter, which every
    process of the machine shares; an embedded sandbox is each process's own."""
    if server_url is None or sandbox:
        return target
    server = PrefectRateGate(target.limits, base_url=target.base_url, api_key=target.api_key)
    return replace(target, gate=BothGates(shared_limiter(target), server))
