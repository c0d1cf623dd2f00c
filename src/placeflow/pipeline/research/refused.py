"""What the service's refusals of a research request say: the error's name, the fields it
refuses by policy, and the message a refused research ends with."""

from __future__ import annotations

from typing import Any

from placeflow.api.errors import ApiError, Unprocessable


def _body(exc: ApiError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("detail"), dict):
        return {**body, **body["detail"]}
    return body if isinstance(body, dict) else {}


def error_name(exc: ApiError) -> str | None:
    value = _body(exc).get("error")
    return str(value) if value else exc.error_code


def rejected_fields(exc: ApiError) -> dict[str, str]:
    body = _body(exc)
    rejected = body.get("rejected_fields")
    if exc.error_code == "FIELD_REJECTED" or isinstance(rejected, dict):
        return {str(k): str(v) for k, v in (rejected or {}).items()} or {"?": str(exc)}
    return {}


def policy_message(exc: Unprocessable) -> str:
    rejected = rejected_fields(exc)
    why = "; ".join(f"{name}: {reason}" for name, reason in rejected.items()) or str(exc)
    return f"the service refuses to research field(s) by policy ({why}); nothing was charged"
