"""Turning an error response or a broken connection into the typed error it stands for."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import httpx

from placeflow.api.errors import (
    ApiError,
    BadRequest,
    ConnectionLost,
    FieldProblem,
    Forbidden,
    IdempotencyConflict,
    InsufficientCredits,
    NotFound,
    PlaceflowError,
    RateLimited,
    RequestTimedOut,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    UnexpectedResponse,
    Unprocessable,
    summarise_details,
)
from placeflow.api.limits import field_path
from placeflow.api.retry import parse_retry_after, parse_timestamp
from placeflow.support.redact import key_hint, redact_text
from placeflow.support.text import cap_text

_NEEDED_KEYS = (
    "needed_credits",
    "needed",
    "required_credits",
    "credits_needed",
    "estimated_credits",
)
_AVAILABLE_KEYS = ("available", "available_credits", "remaining")
MAX_ERROR_BODY = 20_000
"""Characters of an error body kept on the error (an HTML page from a proxy, or worse)."""


def parse_details(raw: Any) -> list[FieldProblem]:
    """Field problems from a 400 `detail` list ({field, message, type}), a 422 list
    ({loc, msg, type}) or a deep-research `rejected_fields` mapping."""
    out: list[FieldProblem] = []
    if isinstance(raw, dict):
        return [
            FieldProblem(f"attributes.{name}", str(reason), "field_rejected")
            for name, reason in raw.items()
        ]
    if not isinstance(raw, list):
        return out
    for item in raw:
        if not isinstance(item, dict):
            out.append(FieldProblem("body", str(item)))
            continue
        field = item.get("field")
        if not isinstance(field, str):
            loc = item.get("loc")
            field = field_path(loc) if isinstance(loc, list) else "body"
        message = item.get("message", item.get("msg", ""))
        out.append(FieldProblem(field, str(message), str(item.get("type", "value_error"))))
    return out


def _first_int(sources: Sequence[dict[str, Any]], names: Sequence[str]) -> int | None:
    for source in sources:
        for name in names:
            value = source.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


class _Body:
    """The parts of an error body the client uses, whichever of the spec's shapes it has."""

    def __init__(self, response: httpx.Response, secrets: Sequence[str]) -> None:
        text = redact_text(response.text, secrets)
        try:
            self.data: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            self.data = None
        if len(text) > MAX_ERROR_BODY:  # kept for the error's `body`: capped, not parsed
            self.data = None
        self.text = cap_text(text, MAX_ERROR_BODY)
        top = self.data if isinstance(self.data, dict) else {}
        detail = top.get("detail")
        inner = detail if isinstance(detail, dict) else {}
        self.sources: tuple[dict[str, Any], ...] = (top, inner)
        self.error = self._str("error") or self._str("message")
        if not self.error and isinstance(detail, str):
            self.error = cap_text(detail)
        self.error_code = self._str("error_code")
        self.request_id = self._str("request_id")
        self.details = parse_details(detail) if isinstance(detail, list) else []
        rejected = top.get("rejected_fields")
        if isinstance(rejected, dict):
            self.details += parse_details(rejected)

    def _str(self, name: str) -> str | None:
        for source in self.sources:
            value = source.get(name)
            if isinstance(value, str) and value:
                return cap_text(value)
        return None

    def reason(self) -> str:
        if self.error:
            return self.error
        if self.data is None and self.text.lstrip().startswith("<"):
            title = re.search(r"<title>(.*?)</title>", self.text, re.I | re.S)
            named = f": {' '.join(title.group(1).split())[:120]}" if title else ""
            return f"an HTML page, not the service's JSON (a proxy's?){named}"
        return self.text[:200] if self.text else "no body"


def error_from_response(
    response: httpx.Response,
    *,
    endpoint: str,
    now: float,
    secrets: Sequence[str],
    idempotency_key: str | None = None,
) -> PlaceflowError:
    """The typed error for a non-2xx `response` to `endpoint` (``POST /v1/validate``)."""
    status = response.status_code
    body = _Body(response, secrets)
    hint = key_hint(secrets[0]) if secrets else "(none)"
    common: dict[str, Any] = {
        "endpoint": endpoint,
        "status_code": status,
        "error_code": body.error_code,
        "request_id": body.request_id,
        "body": body.data if body.data is not None else body.text,
    }
    code = f"{status} {body.error_code}" if body.error_code else str(status)
    reason = body.reason()
    error: PlaceflowError
    if status == 429:
        wait = parse_retry_after(response.headers.get("Retry-After"), now=now)
        error = RateLimited(
            f"{endpoint}: rate limit exceeded (429), retry after {_secs(wait)}. If this keeps "
            "happening, the configured rate limits may be above the key's, or something else "
            "may be using the key.",
            endpoint=endpoint,
            wait=wait,
        )
    elif status == 503:
        wait = parse_retry_after(response.headers.get("Retry-After"), now=now)
        resume_at = body._str("resume_at")
        resume = parse_timestamp(resume_at)
        if resume is not None:
            wait = max(wait or 0.0, resume - now)
        what = f"in maintenance until {resume_at}" if resume_at else f"unavailable: {reason}"
        error = ServiceUnavailable(
            f"{endpoint}: service {what} (503); retry after {_secs(wait)}.",
            endpoint=endpoint,
            wait=wait,
            resume_at=resume_at,
        )
    elif status >= 500 and status != 501:
        error = ServerError(
            f"{endpoint}: server error ({code}): {reason}. Retry later; if it persists the "
            "service is having an outage.",
            endpoint=endpoint,
            status_code=status,
        )
    elif status == 400:
        details = body.details
        summary = summarise_details(details) if details else reason
        error = BadRequest(
            f"{endpoint}: request refused ({code}): {summary}. Fix the named fields and resend.",
            details=details,
            **common,
        )
    elif status == 401:
        error = Unauthorized(
            f"{endpoint}: API key {hint} not accepted ({code}): {reason}. Check that the key "
            "is configured and has not been rotated.",
            **common,
        )
    elif status == 402:
        needed = _first_int(body.sources, _NEEDED_KEYS)
        available = _first_int(body.sources, _AVAILABLE_KEYS)
        error = InsufficientCredits(
            f"{endpoint}: not enough credits ({code}): needs {_n(needed)}, "
            f"{_n(available)} available. Add credits or send fewer rows; nothing was charged.",
            needed=needed,
            available=available,
            **common,
        )
    elif status == 403:
        error = Forbidden(
            f"{endpoint}: API key {hint} may not do this ({code}): {reason}. Check that the "
            "key is active and entitled to this endpoint.",
            **common,
        )
    elif status == 404:
        error = NotFound(
            f"{endpoint}: not found ({code}): {reason}. Check the id belongs to this key.",
            **common,
        )
    elif status == 409:
        error = IdempotencyConflict(
            f"{endpoint}: Idempotency-Key {idempotency_key!r} was already used with a "
            f"different body ({code}). Resend the identical body to get the original job, "
            "or use a new key for new work.",
            idempotency_key=idempotency_key,
            **common,
        )
    elif status == 422:
        details = body.details
        summary = summarise_details(details) if details else reason
        error = Unprocessable(
            f"{endpoint}: request cannot be processed ({code}): {summary}. Fix the request; "
            "resending it unchanged will fail again.",
            details=details,
            **common,
        )
    else:
        error = UnexpectedResponse(f"{endpoint}: unexpected response ({code}): {reason}.", **common)
    return error


def error_from_transport(exc: httpx.TransportError, *, endpoint: str) -> PlaceflowError:
    """The typed error for a request that got no response."""
    kind = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return RequestTimedOut(
            f"{endpoint}: could not connect in time ({kind}); the request was not sent.",
            endpoint=endpoint,
            maybe_sent=False,
        )
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimedOut(
            f"{endpoint}: no response in time ({kind}); the request may have been processed.",
            endpoint=endpoint,
        )
    if isinstance(exc, httpx.ConnectError):
        return ConnectionLost(
            f"{endpoint}: could not connect ({kind}); the request was not sent.",
            endpoint=endpoint,
            maybe_sent=False,
        )
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError):
        return ConnectionLost(
            f"{endpoint}: connection lost ({kind}); the request may have been processed.",
            endpoint=endpoint,
        )
    return ApiError(f"{endpoint}: request could not be made ({kind}). Check the base URL.")


def _secs(wait: float | None) -> str:
    return "an unstated delay" if wait is None else f"{wait:g} s"


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)
