"""A second, deliberately small service of the spec's job route, written from the spec alone.

Not the sandbox (src/placeflow/emulator/), and not built from it: plain `http.server` on
loopback, a real clock, and the spec read differently wherever it leaves room
(docs/spec-readings.md, "A second service"):

- no `Idempotent-Replayed` header on a replayed job (the spec names it for calls only);
- `created_at`, `started_at`, `completed_at`, `expires_at` and the usage's
  `validation_timestamp` in whole seconds, cut down (`whole_seconds`);
- its clock `skew` seconds off this machine's;
- a job's hold in `current_usage` from its submission (the spec's "credits reserved by in-flight
  requests"), or, with `holds_at_completion`, nothing until the job ends;
- result URLs that expire after `url_ttl` seconds; a file served without the key;
- failed rows free, or billed with `bill_failed_rows`;
- 429 with `Retry-After` as an HTTP date, a number of seconds, a fraction, or none;
- a replay returns the stored answer byte for byte (the job as it was submitted);
- pricing rates under names of its own.

Fault knobs: `drop_request_rate` (the connection closed before the request is processed),
`drop_response_rate` (processed, then closed without an answer), `retention` (seconds an
Idempotency-Key is kept from the job's creation; after it the same key is new work). What it
records (`Ledger`) is what the tests judge placeflow by.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

KEY = "fk_live_0123456789abcdef"
"""The one key the service knows."""


@dataclass(frozen=True)
class Reading:
    """How this service reads the spec where it is open, and the faults it plays."""

    seed: int = 0
    drop_request_rate: float = 0.0
    drop_response_rate: float = 0.0
    retention: float = 1.0
    rows_per_second: float = 2000.0
    queued_seconds: float = 0.2
    skew: float = -37.0
    whole_seconds: bool = True
    holds_at_completion: bool = False
    url_ttl: float = 2.0
    fail_row_rate: float = 0.05
    bill_failed_rows: bool = False
    retry_after: str = "date"
    """date, seconds, fraction or none."""
    limits: tuple[tuple[int, float], ...] = ((20, 1.0), (1200, 60.0))
    replay_header: bool = False
    quota: int = 1_000_000
    lose_reads: bool = True
    """Whether reads (status, usage) are lost at the drop rates too, not only job POSTs."""


@dataclass
class Job:
    batch_id: str
    kind: str
    pois: list[dict[str, Any]]
    key: str | None
    created: float
    """This service's clock (skew included)."""
    body_digest: str
    answer: bytes = b""
    cancelled_at: float | None = None
    settled: bool = False
    billed: int = 0
    lines: list[dict[str, Any]] = field(default_factory=list)
    file: bytes = b""

    def done_at(self, reading: Reading) -> float:
        return self.created + reading.queued_seconds + len(self.pois) / reading.rows_per_second


@dataclass
class Ledger:
    """What the service did, as it saw it."""

    charged: int = 0
    jobs: list[Job] = field(default_factory=list)
    requests: int = 0
    dropped_requests: int = 0
    dropped_answers: int = 0
    replays: int = 0
    conflicts: int = 0
    rate_limited: int = 0
    expired_downloads: int = 0
    cancels: int = 0
    posts: list[tuple[float, str, str]] = field(default_factory=list)
    """Every job POST: when (this machine's clock), its Idempotency-Key, what became of it."""

    def counts(self) -> dict[str, int]:
        """What it saw, in figures (printed by the slow sweep)."""
        names = ("charged", "requests", "dropped_requests", "dropped_answers", "replays",
                 "conflicts", "rate_limited", "expired_downloads", "cancels")  # fmt: skip
        return {"jobs": len(self.jobs)} | {name: getattr(self, name) for name in names}

    def held(self) -> int:
        return sum(len(j.pois) for j in self.jobs if not j.settled)

    def billed_per_place(self) -> dict[str, int]:
        """Credits billed per place (its poi_name and address fields as sent)."""
        out: dict[str, int] = {}
        for job in self.jobs:
            for poi, line in zip(job.pois, job.lines, strict=False):
                if line.get("_billed"):
                    ident = json.dumps({k: v for k, v in poi.items() if k != "id"}, sort_keys=True)
                    out[ident] = out.get(ident, 0) + 1
        return out

    def keys_made_twice(self) -> set[str]:
        """The Idempotency-Keys the service made more than one job under."""
        seen: dict[str, int] = {}
        for job in self.jobs:
            seen[job.key or ""] = seen.get(job.key or "", 0) + 1
        return {key for key, n in seen.items() if n > 1}

    def jobs_per_body(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for job in self.jobs:
            out[job.body_digest] = out.get(job.body_digest, 0) + 1
        return out


class Service:
    """The state behind the HTTP layer; every method is called under `lock`."""

    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.rng = random.Random(f"foreign-{reading.seed}")
        self.lock = threading.Lock()
        self.ledger = Ledger()
        self.keys: dict[str, Job] = {}
        self.by_id: dict[str, Job] = {}
        self.urls: dict[str, tuple[str, float]] = {}
        self.arrivals: list[float] = []
        self.base_url = ""

    def now(self) -> float:
        return time.time() + self.reading.skew

    def stamp(self, t: float) -> str:
        when = datetime.fromtimestamp(int(t) if self.reading.whole_seconds else t, UTC)
        if self.reading.whole_seconds:
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
        return when.isoformat()

    def admit(self) -> float | None:
        """None when the key's windows allow this request, else the seconds to wait."""
        t = time.monotonic()
        longest = max(s for _, s in self.reading.limits)
        self.arrivals = [a for a in self.arrivals if t - a < longest]
        for count, seconds in self.reading.limits:
            inside = [a for a in self.arrivals if t - a < seconds]
            if len(inside) >= count:
                return inside[0] + seconds - t
        self.arrivals.append(t)
        return None

    # jobs
    def settle_due(self) -> None:
        now = self.now()
        for job in self.ledger.jobs:
            if not job.settled and (
                job.cancelled_at is not None or now >= job.done_at(self.reading)
            ):
                self._settle(job, now)

    def _processed(self, job: Job, now: float) -> int:
        end = job.cancelled_at if job.cancelled_at is not None else now
        ran = end - job.created - self.reading.queued_seconds
        return max(0, min(len(job.pois), int(ran * self.reading.rows_per_second)))

    def _settle(self, job: Job, now: float) -> None:
        done = self._processed(job, now)
        job.lines = [self._line(job, i) for i in range(done)]
        job.billed = sum(1 for line in job.lines if line["_billed"])
        self.ledger.charged += job.billed
        job.settled = True
        clean = [{k: v for k, v in line.items() if k != "_billed"} for line in job.lines]
        text = "".join(json.dumps(line) + "\n" for line in clean).encode()
        job.file = gzip.compress(text, mtime=0)

    def _line(self, job: Job, i: int) -> dict[str, Any]:
        poi = job.pois[i]
        rng = random.Random(f"{self.reading.seed}-{job.batch_id}-{i}")
        ok = rng.random() >= self.reading.fail_row_rate
        stamp = self.stamp(job.created)
        base: dict[str, Any] = {"success": ok, "id": poi.get("id"), "request_id": f"r{i}"}
        if not ok:
            base |= {"error": "lookup failed", "error_code": "EXTERNAL_API_ERROR"}
            base["_billed"] = self.reading.bill_failed_rows
            return base
        status = rng.choice(["open", "open", "open", "closed", "unknown"])
        block = {
            "status": status,
            "closure_confidence": 0.8 if status == "closed" else 0.1,
            "closure_reason": "permanent" if status == "closed" else None,
        }
        base["operational_status"] = block
        if job.kind == "validate":
            return base | {
                "existence_confidence": round(rng.random(), 3),
                "validation_timestamp": stamp,
                "_billed": True,
            }
        phone = {"value": {"number": f"+1555{i:07d}"}, "as_of": None, "confidence": "medium"}
        return base | {
            "attributes": {"phone": phone},
            "status": {"existence_confidence": round(rng.random(), 3)},
            "enrichment_timestamp": stamp,
            "_billed": True,
        }

    def submit(self, kind: str, body: bytes, key: str | None) -> tuple[int, Any, bool]:
        """POST /v1/jobs/{kind}: the stored answer while the key is kept (replayed: True)."""
        digest = hashlib.sha256(body).hexdigest()
        now = self.now()
        if key is not None and key in self.keys:
            old = self.keys[key]
            kept = time.time() - (old.created - self.reading.skew) < self.reading.retention
            if kept and old.cancelled_at is None:
                if old.body_digest != digest:
                    self.ledger.conflicts += 1
                    return 409, error("key reused with another body", "IDEMPOTENCY_CONFLICT"), False
                self.ledger.replays += 1
                return 200, old.answer, True
        try:
            pois = json.loads(body)["pois"]
            assert isinstance(pois, list) and 1 <= len(pois) <= 10_000
            assert all(
                isinstance(p, dict) and 1 <= len(p.get("poi_name") or "") <= 200 for p in pois
            )
        except (ValueError, KeyError, TypeError, AssertionError):
            return 400, error("invalid job body", "VALIDATION_ERROR"), False
        if self.reading.quota - self.ledger.charged - self.ledger.held() < len(pois):
            return 402, error("insufficient credits", "INSUFFICIENT_CREDITS"), False
        job = Job(f"b-{secrets.token_hex(6)}", kind, pois, key, now, digest)
        eta = job.done_at(self.reading) - now
        job.answer = json.dumps({
            "batch_id": job.batch_id, "type": kind, "status": "queued",
            "created_at": self.stamp(now), "total_items": len(pois),
            "eta_seconds": int(eta) + 1, "eta_completion_at": self.stamp(now + eta),
        }).encode()  # fmt: skip
        self.ledger.jobs.append(job)
        self.by_id[job.batch_id] = job
        if key is not None:
            self.keys[key] = job
        return 200, job.answer, False

    def status(self, batch_id: str) -> tuple[int, Any]:
        job = self.by_id.get(batch_id)
        if job is None:
            return 404, error("no such job", "NOT_FOUND")
        now = self.now()
        done = self._processed(job, now)
        out: dict[str, Any] = {
            "batch_id": job.batch_id, "type": job.kind, "created_at": self.stamp(job.created),
            "total_items": len(job.pois),
        }  # fmt: skip
        if job.settled:
            failed = sum(1 for line in job.lines if not line["success"])
            ended = job.cancelled_at or job.done_at(self.reading)
            token = secrets.token_urlsafe(12)
            self.urls[token] = (job.batch_id, time.monotonic() + self.reading.url_ttl)
            out |= {
                "status": "cancelled" if job.cancelled_at is not None else "completed",
                "started_at": self.stamp(job.created + self.reading.queued_seconds),
                "completed_at": self.stamp(ended),
                "progress": {"processed": done, "succeeded": done - failed, "failed": failed},
                "eta_seconds": 0,
                "results": {"format": "jsonl.gz", "total_items": len(job.lines), "files": [{
                    "url": f"{self.base_url}/files/{token}/result.jsonl.gz",
                    "size_bytes": len(job.file), "sha256": hashlib.sha256(job.file).hexdigest(),
                    "expires_at": self.stamp(now + self.reading.url_ttl),
                }]},
            }  # fmt: skip
            return 200, out
        left = job.done_at(self.reading) - now
        running = now > job.created + self.reading.queued_seconds
        out |= {
            "status": "running" if running else "queued",
            "progress": {"processed": done, "succeeded": done, "failed": 0},
            "eta_seconds": int(left) + 1, "eta_completion_at": self.stamp(now + left),
        }  # fmt: skip
        return 200, out

    def cancel(self, batch_id: str) -> tuple[int, Any]:
        job = self.by_id.get(batch_id)
        if job is None:
            return 404, error("no such job", "NOT_FOUND")
        if not job.settled:
            job.cancelled_at = self.now()
            self.ledger.cancels += 1
            self._settle(job, job.cancelled_at)
        return 200, {}

    def usage(self) -> dict[str, Any]:
        held = 0 if self.reading.holds_at_completion else self.ledger.held()
        used = self.ledger.charged + held
        q = self.reading.quota
        return {
            "tier": "paid", "api_key_id": "key_1", "customer_id": "cust_1", "key_hint": KEY[-4:],
            "customer_name": "Foreign test", "quota_limit": q, "current_usage": used,
            "remaining": q - used, "available": q - used, "percentage_used": 100 * used / q,
            "reset_date": "2099-01-01", "period": "monthly", "status": "active",
            "validation_timestamp": self.stamp(self.now()),
        }  # fmt: skip


def error(message: str, code: str) -> dict[str, Any]:
    return {"success": False, "error": message, "error_code": code, "request_id": None}


PRICING = {
    "unit": "credits",
    "packs_url": "https://foreign.invalid/packs",
    "rates": [
        {"key": "places.validate", "label": "Validation", "credits": 1, "per": "place"},
        {"key": "places.enrich", "label": "Enrichment", "credits": 1, "per": "place"},
        {"key": "places.jobs", "label": "Bulk job row", "credits": 1, "per": "row", "hold": 1},
    ],
}


def handler_for(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self.handle_one("GET")

        def do_POST(self) -> None:
            self.handle_one("POST")

        def do_DELETE(self) -> None:
            self.handle_one("DELETE")

        def handle_one(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path
            if path.startswith("/files/"):
                self.file(path)
                return
            with service.lock:
                service.ledger.requests += 1
                if path == "/v1/pricing":
                    self.send(200, PRICING)
                    return
                if self.headers.get("X-API-Key") != KEY:
                    self.send(401, error("missing or invalid API key", "AUTHENTICATION_ERROR"))
                    return
                key = self.headers.get("Idempotency-Key") or ""
                post = method == "POST" and path.startswith("/v1/jobs/")
                wait = service.admit()
                if wait is not None:
                    service.ledger.rate_limited += 1
                    if post:
                        service.ledger.posts.append((time.time(), key, "429"))
                    self.send(429, {"detail": {"error": "rate limit exceeded"}}, retry=wait)
                    return
                lossy = post or service.reading.lose_reads
                if lossy and service.rng.random() < service.reading.drop_request_rate:
                    service.ledger.dropped_requests += 1
                    if post:
                        service.ledger.posts.append((time.time(), key, "request lost"))
                    self.drop()
                    return
                service.settle_due()
                made = len(service.ledger.jobs)
                status, answer, replayed = self.route(method, path, body)
                lose = lossy and service.rng.random() < service.reading.drop_response_rate
                if post:
                    what = "replay" if replayed else str(status)
                    what = "new job" if len(service.ledger.jobs) > made else what
                    service.ledger.posts.append(
                        (time.time(), key, what + (", answer lost" if lose else ""))
                    )
                if lose:
                    service.ledger.dropped_answers += 1
                    self.drop()
                    return
                self.send(status, answer, replayed=replayed)

        def route(self, method: str, path: str, body: bytes) -> tuple[int, Any, bool]:
            parts = path.strip("/").split("/")
            if method == "POST" and parts[:2] == ["v1", "jobs"] and len(parts) == 3:
                if parts[2] not in ("validate", "enrich"):
                    return 404, error("not found", "NOT_FOUND"), False
                return service.submit(parts[2], body, self.headers.get("Idempotency-Key"))
            if parts[:2] == ["v1", "jobs"] and len(parts) == 3:
                if method == "GET":
                    return (*service.status(parts[2]), False)
                if method == "DELETE":
                    return (*service.cancel(parts[2]), False)
            if method == "GET" and path == "/v1/usage":
                return 200, service.usage(), False
            if method == "GET" and path == "/users/me":
                u = service.usage()
                me = ("api_key_id", "customer_id", "quota_limit", "current_usage")
                return 200, {k: u[k] for k in me}, False
            return 404, error("not found", "NOT_FOUND"), False

        def file(self, path: str) -> None:
            token = path.split("/")[2] if path.count("/") >= 3 else ""
            with service.lock:
                found = service.urls.get(token)
                if found is None or time.monotonic() > found[1]:
                    service.ledger.expired_downloads += 1
                    self.send(403, {"error": "URL expired", "error_code": "URL_EXPIRED"})
                    return
                data = service.by_id[found[0]].file
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def drop(self) -> None:
            self.close_connection = True

        def send(
            self, status: int, answer: Any, *, retry: float | None = None, replayed: bool = False
        ) -> None:
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if replayed and service.reading.replay_header:
                self.send_header("Idempotent-Replayed", "true")
            if retry is not None:
                shape = service.reading.retry_after
                if shape == "date":
                    self.send_header(
                        "Retry-After", formatdate(time.time() + retry + 1, usegmt=True)
                    )
                elif shape == "seconds":
                    self.send_header("Retry-After", str(int(retry) + 1))
                elif shape == "fraction":
                    self.send_header("Retry-After", f"{retry:.3f}")
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serve(reading: Reading) -> Iterator[Service]:
    """The service on a free loopback port for the length of the block (`service.base_url`)."""
    service = Service(reading)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(service))
    server.daemon_threads = True
    service.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="foreign-service", daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
