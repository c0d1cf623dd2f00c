"""Failure modes, drawn from a seeded generator or scripted for the next matching requests."""

from __future__ import annotations

import random
import threading
from collections import deque
from dataclasses import dataclass

from placeflow.emulator.jobs import Fate
from placeflow.emulator.settings import FaultConfig

REQUEST_FAULTS = (
    "500",
    "503",
    "503_html",
    "maintenance",
    "429",
    "drop_request",
    "drop_response",
    "slow",
)
DOWNLOAD_FAULTS = ("truncate", "corrupt", "expire")
JOB_FAULTS = ("fail", "stall", "fail_midway", "refuse_file")
DOWNLOAD_ROUTE = "GET /files"
JOB_ROUTE = "JOB"
SYNC_ROUTES = frozenset({"POST /v1/validate", "POST /v1/enrich", "POST /v1/enrich-batch"})
"""The synchronous, charged place routes: no Idempotency-Key, so a lost answer is money."""


class Gate:
    """Holds the next request to a route until a test opens it: the moment to kill a client.

    `arrived` is set when the request is held; `open()` lets it through to be processed, and
    `open(drop=True)` closes its connection unprocessed, as if it had never been sent.
    """

    def __init__(self, route: str, after: int = 0) -> None:
        self.route = route
        self.after = after
        """How many requests to the route pass before the one held."""
        self.arrived = threading.Event()
        self._opened = threading.Event()
        self.drop = False

    def open(self, *, drop: bool = False) -> None:
        self.drop = drop
        self._opened.set()

    def wait(self, timeout: float = 120.0) -> None:
        self.arrived.set()
        self._opened.wait(timeout)


@dataclass
class _Scripted:
    route: str
    kind: str
    remaining: int


class FaultPlan:
    """Decides, per request, download or job, which failure (if any) the sandbox acts out.

    Scripted faults (`inject`) come first, in order, for requests whose route matches (the route
    template such as `POST /v1/jobs/enrich`, `GET /files` for downloads, `JOB` for job fates);
    otherwise the configured rates are drawn from a generator seeded by `FaultConfig.seed`.
    """

    def __init__(self, config: FaultConfig) -> None:
        self.config = config
        self._rng = random.Random(config.seed)  # noqa: S311 - reproducible draws, not secrets
        self._script: deque[_Scripted] = deque()
        self._gates: dict[str, Gate] = {}
        self._lock = threading.Lock()

    def hold(self, route: str, after: int = 0) -> Gate:
        """Hold the next request to `route`, or the one after `after` more (see `Gate`)."""
        gate = Gate(route, after)
        with self._lock:
            self._gates[route] = gate
        return gate

    def take_gate(self, route: str) -> Gate | None:
        with self._lock:
            gate = self._gates.get(route)
            if gate is not None and gate.after > 0:
                gate.after -= 1  # this one passes
                return None
            return self._gates.pop(route, None)

    def inject(self, route: str, kind: str, times: int = 1) -> None:
        known = REQUEST_FAULTS + DOWNLOAD_FAULTS + JOB_FAULTS
        if kind not in known:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(known)}")
        with self._lock:
            self._script.append(_Scripted(route, kind, times))

    def _scripted(self, route: str) -> str | None:
        for item in self._script:
            if item.route == route and item.remaining > 0:
                item.remaining -= 1
                if item.remaining == 0:
                    self._script.remove(item)
                return item.kind
        return None

    def _draw(self, choices: tuple[tuple[str, float], ...]) -> str | None:
        r = self._rng.random()
        for kind, rate in choices:
            if r < rate:
                return kind
            r -= rate
        return None

    def counted_late(self) -> float:
        """Seconds this request waits before the key's rate windows count it (0: at once).
        Drawn only when the reading is played, so other draws stay as they were."""
        c = self.config
        if c.counted_late_rate <= 0:
            return 0.0
        with self._lock:
            late = self._rng.random() < c.counted_late_rate
        return c.counted_late_seconds if late else 0.0

    def request_fault(self, route: str) -> str | None:
        c = self.config
        with self._lock:
            fault = self._scripted(route) or self._draw(
                (
                    ("maintenance", c.maintenance_rate),
                    ("503", c.error_503_rate),
                    ("503_html", c.html_503_rate),
                    ("500", c.error_500_rate),
                    ("429", c.extra_429_rate),
                    ("drop_request", c.drop_request_rate),
                    ("drop_response", c.drop_response_rate),
                    ("slow", c.slow_rate),
                )
            )
            if fault is None and route in SYNC_ROUTES and c.sync_reset_after_rate:
                fault = self._draw((("drop_response", c.sync_reset_after_rate),))
            return fault

    def download_fault(self, first: bool) -> str | None:
        """Truncation, corruption and expiry strike a file's first download only, so a retry
        (with a fresh URL, for expiry) heals."""
        c = self.config
        with self._lock:
            scripted = self._scripted(DOWNLOAD_ROUTE)
            if scripted or not first:
                return scripted
            return self._draw(
                (
                    ("truncate", c.truncate_download_rate),
                    ("corrupt", c.corrupt_download_rate),
                    ("expire", c.expire_url_rate),
                )
            )

    def job_fate(self) -> tuple[Fate, bool]:
        """A new job's fate, and whether the file origin will refuse its result file forever."""
        c = self.config
        with self._lock:
            scripted = self._scripted(JOB_ROUTE)
            refuse = scripted == "refuse_file"
            fate = None if refuse else scripted
            fate = fate or self._draw(
                (
                    ("fail", c.job_fail_rate),
                    ("stall", c.job_stall_rate),
                    ("fail_midway", c.job_fail_midway_rate),
                )
            )
            if not refuse and c.refuse_file_rate:
                refuse = self._draw((("refuse_file", c.refuse_file_rate),)) is not None
        return _FATES.get(fate or "normal", "normal"), refuse


_FATES: dict[str, Fate] = {f: f for f in ("normal", "fail", "stall", "fail_midway")}
