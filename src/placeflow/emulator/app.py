"""The sandbox's thin HTTP layer: routes, auth, limits and faults, then the backend.

Transport-agnostic: `handle_api` and `handle_files` take a method, path, query, headers and body
and return a `Reply` (or `DROP`, to close the connection without answering). The threaded server
and the in-process httpx transport in `server.py` both call them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from placeflow.emulator.backend import KeyState, SandboxBackend
from placeflow.emulator.faults import DOWNLOAD_ROUTE
from placeflow.emulator.research import deep_research
from placeflow.emulator.responses import (
    Reply,
    ServiceError,
    error_response,
    gateway_error,
    iso,
    with_unknown_fields,
)
from placeflow.emulator.settings import FaultConfig, KeySpec, ManualClock, parse_key_spec

DROP = Reply(0, None)
"""Close the connection without a response."""

Handler = Callable[[KeyState, bytes, dict[str, str], Mapping[str, str]], Reply]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    template: str
    handler: Handler


class SandboxApp:
    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        b = backend

        def route(method: str, template: str, handler: Handler) -> Route:
            regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
            return Route(method, re.compile(f"^{regex}$"), f"{method} {template}", handler)

        self.routes = (
            route("POST", "/v1/validate", lambda s, body, p, h: b.validate(s, body)),
            route("POST", "/v1/enrich", lambda s, body, p, h: b.enrich(s, body)),
            route("POST", "/v1/enrich-batch", lambda s, body, p, h: b.enrich_batch(s, body)),
            route(
                "POST",
                "/v1/jobs/validate",
                lambda s, body, p, h: b.submit_job(s, "validate", body, h.get("idempotency-key")),
            ),
            route(
                "POST",
                "/v1/jobs/enrich",
                lambda s, body, p, h: b.submit_job(s, "enrich", body, h.get("idempotency-key")),
            ),
            route(
                "GET", "/v1/jobs/{batch_id}", lambda s, body, p, h: b.job_status(s, p["batch_id"])
            ),
            route(
                "DELETE",
                "/v1/jobs/{batch_id}",
                lambda s, body, p, h: b.cancel_job(s, p["batch_id"]),
            ),
            route("GET", "/v1/usage", lambda s, body, p, h: b.usage(s)),
            route("POST", "/v1/deep-research", lambda s, body, p, h: deep_research(b, s, body)),
        )

    def sleep(self, seconds: float) -> None:
        clock = self.backend.clock
        if isinstance(clock, ManualClock):
            clock.advance(seconds)
        else:
            time.sleep(seconds)

    # --- API origin -------------------------------------------------------------------

    def handle_api(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request to the API origin. `headers` keys are lower-case."""
        if path.startswith("/_sandbox/"):
            return self._control(method, path, body)
        if path == "/v1/pricing" or path == "/health":
            if method != "GET":
                return Reply(405, {"detail": "Method Not Allowed"})
            self.backend.count(f"GET {path}", 200)
            return (
                self.backend.pricing()
                if path == "/v1/pricing"
                else Reply(
                    200,
                    {
                        "status": "ok",
                        "service": "placeflow-sandbox",
                        "time": iso(self.backend.clock.now()),
                    },
                )
            )
        matched: tuple[Route, dict[str, str]] | None = None
        path_known = False
        for r in self.routes:
            m = r.pattern.match(path)
            if m:
                path_known = True
                if r.method == method:
                    matched = (r, m.groupdict())
                    break
        if matched is None:
            status = 405 if path_known else 404
            self.backend.count(f"{method} (unrouted)", status)
            return Reply(status, {"detail": "Method Not Allowed" if path_known else "Not Found"})
        r, params = matched
        reply = self._serve(r, params, headers, body)
        self.backend.count(r.template, reply.status or "dropped")
        return reply

    def _serve(
        self, r: Route, params: dict[str, str], headers: Mapping[str, str], body: bytes
    ) -> Reply:
        try:
            state = self.backend.resolve_key(headers.get("x-api-key"))
            late = self.backend.faults.counted_late()
            if late:
                self.sleep(late)  # a queue in front of the counter (docs/spec-readings.md, 17)
            self.backend.admit(state)
            gate = self.backend.faults.take_gate(r.template)
            if gate is not None:
                gate.wait()
                if gate.drop:
                    return DROP
            fault = self.backend.faults.request_fault(r.template)
            if fault == "drop_request":
                return DROP
            if fault == "slow":
                self.sleep(self.backend.faults.config.slow_seconds)
            elif fault is not None and fault != "drop_response":
                raise self._fault_error(fault, r.template)
            reply = r.handler(state, body, params, headers)
            if fault == "drop_response":
                return DROP
            if self.backend.faults.config.unknown_fields:
                return Reply(
                    reply.status, with_unknown_fields(reply.body), reply.headers, reply.raw
                )
            return reply
        except ServiceError as exc:
            return exc.reply

    def _fault_error(self, fault: str, template: str) -> ServiceError:
        now = self.backend.clock.now()
        wait = self.backend.faults.config.retry_after_seconds
        retry = {"Retry-After": str(wait)}
        if fault == "429":
            return gateway_error(429, "rate limit exceeded", headers=retry)
        if fault == "maintenance":
            return gateway_error(
                503,
                "maintenance",
                headers=retry,
                message="scheduled maintenance; retry after resume_at",
                resume_at=iso(now + wait),
            )
        if fault == "503_html":
            page = b"<html><head><title>503 Service Temporarily Unavailable</title></head>"
            page += b"<body><center><h1>503 Service Temporarily Unavailable</h1></center></body>"
            headers = {**retry, "Content-Type": "text/html"}
            return ServiceError(503, None, headers, raw=page + b"</html>\n")
        if fault == "503":
            error = (
                "operational_status_unavailable"
                if template.endswith("deep-research")
                else "service temporarily unavailable; retry later"
            )
            return error_response(503, error, "SERVICE_UNAVAILABLE", now=now, headers=retry)
        return error_response(500, "internal server error; retry later", "INTERNAL_ERROR", now=now)

    # --- result-file origin -----------------------------------------------------------

    def handle_files(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
    ) -> Reply:
        """Presigned result files: no API key needed, refused once expired."""
        m = re.match(r"^/results/(?P<batch_id>[^/]+)/result\.jsonl\.gz$", path)
        if method != "GET" or m is None:
            self.backend.count(DOWNLOAD_ROUTE, 404)
            return Reply(404, {"error": "no such object", "error_code": "NOT_FOUND"})
        carried = "x-api-key" in headers or "authorization" in headers
        gate = self.backend.faults.take_gate(DOWNLOAD_ROUTE)
        if gate is not None:
            gate.wait()
            if gate.drop:
                return DROP
        reply = self.backend.download(
            m["batch_id"],
            query.get("expires", ""),
            query.get("sig", ""),
            carried,
            query.get("part"),
        )
        self.backend.count(DOWNLOAD_ROUTE, reply.status)
        return reply

    # --- inspection and control -------------------------------------------------------

    def _control(self, method: str, path: str, body: bytes) -> Reply:
        b = self.backend
        try:
            data: Any = json.loads(body) if body else {}
            if method == "GET" and path == "/_sandbox/stats":
                return Reply(200, b.stats())
            if method == "GET" and path == "/_sandbox/ledger":
                return Reply(200, b.ledger())
            if method == "POST" and path == "/_sandbox/refuse_file":
                b.refuse_file(str(data["batch_id"]))
                return Reply(200, {"refused": data["batch_id"]})
            if method == "POST" and path == "/_sandbox/reset":
                b.reset()
                return Reply(200, {"reset": True})
            if method == "POST" and path == "/_sandbox/faults":
                b.set_faults(FaultConfig.from_dict(data))
                return Reply(200, {"faults": data})
            if method == "POST" and path == "/_sandbox/inject":
                b.faults.inject(data["route"], data["kind"], int(data.get("times", 1)))
                return Reply(200, {"injected": data})
            if method == "POST" and path == "/_sandbox/keys":
                spec: KeySpec = (
                    parse_key_spec(data["spec"]) if "spec" in data else b.keys[data["key"]].spec
                )
                if "spec" in data:
                    b.add_key(spec)
                if "available" in data:
                    b.set_available(spec.key, int(data["available"]))
                return Reply(200, {"key_hint": spec.hint, "tier": spec.tier})
            if method == "POST" and path == "/_sandbox/clock":
                if not isinstance(b.clock, ManualClock):
                    return Reply(409, {"error": "the sandbox runs on the system clock"})
                b.clock.advance(float(data["advance"]))
                return Reply(200, {"now": iso(b.clock.now())})
        except (KeyError, ValueError, TypeError) as exc:
            return Reply(400, {"error": f"bad sandbox control request: {exc}"})
        return Reply(404, {"detail": "Not Found"})
