"""Replies and error bodies in the service's own shapes (the spec's Errors table)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from placeflow.api.limits import field_path

CHECKOUT_PATH = "/checkout"

M = TypeVar("M", bound=BaseModel)


def iso(ts: float) -> str:
    """An ISO 8601 UTC timestamp with a Z, as the service writes them."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    """A body sent as is (result files) instead of JSON."""

    def content(self) -> bytes:
        if self.raw is not None:
            return self.raw
        return json.dumps(self.body, separators=(",", ":")).encode()


class ServiceError(Exception):
    """An error reply raised from anywhere in the backend and sent as it is."""

    def __init__(
        self,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        *,
        raw: bytes | None = None,
    ) -> None:
        super().__init__(f"{status}: {body}")
        self.reply = Reply(status, body, headers or {}, raw)


def error_response(
    status: int,
    error: str,
    error_code: str | None,
    *,
    request_id: str | None = None,
    now: float | None = None,
    detail: Any = None,
    headers: dict[str, str] | None = None,
) -> ServiceError:
    """The places endpoints' ErrorResponse: success, error, error_code, request_id, timestamp."""
    body = {
        "success": False,
        "error": error,
        "error_code": error_code,
        "request_id": request_id,
        "validation_timestamp": iso(now) if now is not None else None,
        "detail": detail,
    }
    return ServiceError(status, body, headers)


def gateway_error(
    status: int, error: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> ServiceError:
    """The `{detail: {error, ...}}` shape of gateway-level errors (auth, 429, maintenance)."""
    return ServiceError(status, {"detail": {"error": error, **extra}}, headers)


def bad_request(details: list[dict[str, str]], *, request_id: str, now: float) -> ServiceError:
    """400 in the spec's first shape: VALIDATION_ERROR with a detail per offending field."""
    n = len(details)
    body = {
        "success": False,
        "error": f"invalid request: {n} field{'s' if n != 1 else ''} failed validation",
        "error_code": "VALIDATION_ERROR",
        "request_id": request_id,
        "validation_timestamp": iso(now),
        "detail": details,
    }
    return ServiceError(400, body)


def parse_body(model: type[M], raw: bytes, *, request_id: str, now: float) -> M:
    """Parse and validate a JSON body in one pass, or raise the 400 that names every bad field."""
    try:
        return model.model_validate_json(raw or b"null")
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            detail = {
                "field": "body",
                "message": f"body is not valid JSON: {errors[0]['msg']}",
                "type": "json_invalid",
            }
            raise bad_request([detail], request_id=request_id, now=now) from None
        details = [
            {"field": field_path(e["loc"]), "message": e["msg"], "type": e["type"]} for e in errors
        ]
        raise bad_request(details, request_id=request_id, now=now) from None


def http_validation_error(loc: list[str | int], msg: str, type_: str, value: Any) -> ServiceError:
    """422 HTTPValidationError: `{detail: [{loc, msg, type, input}]}`."""
    return ServiceError(422, {"detail": [{"loc": loc, "msg": msg, "type": type_, "input": value}]})


_EXTRA = {"x_region": "eu-west-3", "x_trace": {"sampled": False, "hops": ["edge", "api"]}}
_NESTED = ("progress", "results", "detail", "stats", "meta")
_ODD_ENUMS = {"period": "rolling_30_days"}


def with_unknown_fields(body: Any) -> Any:
    """`body` with fields the spec never names added (at the top, in nested objects and, in a
    deep-research answer, in each row's `fields`: `UNASKED_FIELD`) and enum-like values it never
    lists where a client keeps them as strings (usage `period`)."""
    if not isinstance(body, dict):
        return body
    out: dict[str, Any] = {**body, **_EXTRA}
    for name in _NESTED:
        inner = out.get(name)
        if isinstance(inner, dict):
            out[name] = {**inner, "x_note": "unknown to the spec", **_files_extra(inner)}
    for name, value in _ODD_ENUMS.items():
        if name in out:
            out[name] = value
    rows = out.get("rows")
    if isinstance(rows, list):  # deep research: a field nobody asked for in each row's fields
        out["rows"] = [_with_unasked_field(row) for row in rows]
    return out


UNASKED_FIELD = {"x_ext": {"note": "unknown to the spec", "v": 2}}
"""What `with_unknown_fields` adds to a deep-research row's `fields`: an entry nobody asked for,
not shaped as a ResultCell (no status), and not billed."""


def _with_unasked_field(row: Any) -> Any:
    if not isinstance(row, dict) or not isinstance(row.get("fields"), dict):
        return row
    return {**row, "fields": {**UNASKED_FIELD, **row["fields"]}}


def _files_extra(inner: dict[str, Any]) -> dict[str, Any]:
    files = inner.get("files")
    if not isinstance(files, list):
        return {}
    return {"files": [{**f, "storage_class": "STANDARD_IA"} for f in files if isinstance(f, dict)]}
