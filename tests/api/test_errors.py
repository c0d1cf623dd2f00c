"""Every error row of the spec that applies to place endpoints maps to a typed error."""

from __future__ import annotations

import pytest

from placeflow.api import errors as e
from placeflow.api.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    IdempotencyConflict,
    InsufficientCredits,
    NotFound,
    PlaceflowError,
    RequestRejected,
    TransientError,
    Unauthorized,
    UnexpectedResponse,
    Unprocessable,
)

from .conftest import JOB_SUBMITTED, KEY, FakeTime, Script, js, mock_client, poi

ERROR_400 = {
    "success": False,
    "error": "invalid request: 1 field failed validation",
    "error_code": "VALIDATION_ERROR",
    "request_id": "req_9",
    "validation_timestamp": "2026-01-01T00:00:00Z",
    "detail": [{"field": "pois[17].poi_name", "message": "too long", "type": "string_too_long"}],
}


def test_tree_has_a_transient_and_a_terminal_branch() -> None:
    """Everything derives from PlaceflowError; only the transient branch is retryable."""
    for cls in (e.RateLimited, e.ServiceUnavailable, e.ServerError, e.ConnectionLost):
        assert issubclass(cls, TransientError)
    terminal = (BadRequest, Unauthorized, InsufficientCredits, Forbidden, NotFound)
    terminal += (IdempotencyConflict, Unprocessable, e.JobFailed, e.JobTimedOut, e.OutcomeUnknown)
    for cls in terminal:
        assert issubclass(cls, ApiError) and not issubclass(cls, TransientError)
    for cls in (ApiError, TransientError, RequestRejected, e.DownloadError):
        assert issubclass(cls, PlaceflowError)
    assert e.InvalidRequest is RequestRejected
    assert "TransientError" in (e.__doc__ or "") and "ResultTooLarge" in (e.__doc__ or "")


def terminal(status: int, body: object, submit: bool = False) -> tuple[ApiError, Script]:
    script = Script([js(status, body)])
    client = mock_client(script, FakeTime())
    call = (
        (lambda: client.submit_enrich_job([poi()], idempotency_key="chunk-7"))
        if submit
        else (lambda: client.validate(poi()))
    )
    with pytest.raises(ApiError) as info:
        call()
    return info.value, script


def test_400_carries_field_details_and_is_not_retried() -> None:
    """A 400 VALIDATION_ERROR names each field; one request, no retry."""
    error, script = terminal(400, ERROR_400)
    assert isinstance(error, BadRequest) and len(script.requests) == 1
    assert error.details[0].field == "pois[17].poi_name"
    assert error.details[0].type == "string_too_long"
    assert error.request_id == "req_9" and error.error_code == "VALIDATION_ERROR"
    assert "pois[17].poi_name: too long" in str(error)


def test_400_gateway_shape_for_a_bad_idempotency_key() -> None:
    """The `{detail: {error, error_code}}` 400 keeps its error and code."""
    body = {"detail": {"error": "invalid Idempotency-Key header", "error_code": "BAD_KEY"}}
    error, _ = terminal(400, body, submit=True)
    assert isinstance(error, BadRequest) and error.error_code == "BAD_KEY"
    assert "invalid Idempotency-Key header" in str(error)


def test_401_says_which_key_by_hint_only() -> None:
    """A 401 names the key by its hint and says to check it."""
    error, _ = terminal(401, {"error": "API key required", "error_code": "AUTHENTICATION_ERROR"})
    assert isinstance(error, Unauthorized)
    assert "…9f3a" in str(error) and KEY not in str(error)


def test_402_carries_needed_and_available() -> None:
    """A 402 reports needed and available credits from the body's detail."""
    body = {
        "success": False,
        "error": "insufficient credits",
        "error_code": "INSUFFICIENT_CREDITS",
        "detail": {"needed_credits": 20, "available_credits": 5, "checkout_url": "x"},
    }
    error, script = terminal(402, body, submit=True)
    assert isinstance(error, InsufficientCredits) and len(script.requests) == 1
    assert (error.needed, error.available) == (20, 5)
    assert "needs 20, 5 available" in str(error)


def test_403_entitlement_is_forbidden() -> None:
    """A 403 from the gateway shape becomes Forbidden with its reason."""
    error, _ = terminal(403, {"detail": {"error": "missing entitlement: enrichment"}})
    assert isinstance(error, Forbidden) and "missing entitlement: enrichment" in str(error)


def test_404_is_not_found() -> None:
    """A 404 becomes NotFound."""
    error, _ = terminal(404, {"error": "job not found", "error_code": "NOT_FOUND"})
    assert isinstance(error, NotFound)


def test_409_carries_the_conflicting_key() -> None:
    """A 409 IDEMPOTENCY_CONFLICT names the key that was reused and what to do."""
    body = {"success": False, "error": "conflict", "error_code": "IDEMPOTENCY_CONFLICT"}
    error, script = terminal(409, body, submit=True)
    assert isinstance(error, IdempotencyConflict) and len(script.requests) == 1
    assert error.idempotency_key == "chunk-7"
    assert "use a new key for new work" in str(error)


def test_422_http_validation_error_details() -> None:
    """A 422 `{detail: [{loc, msg, type}]}` is turned into field paths."""
    body = {"detail": [{"loc": ["path", "batch_id"], "msg": "bad id", "type": "value_error"}]}
    error, _ = terminal(422, body)
    assert isinstance(error, Unprocessable)
    assert error.details[0].field == "path.batch_id"


def test_422_unresolvable_coordinates_keeps_error_and_request_id() -> None:
    """The enrich 422 (error and request_id, no detail list) keeps both."""
    body = {
        "success": False,
        "error": "coordinates unresolvable",
        "request_id": "req_3",
        "error_code": "VALIDATION_ERROR",
    }
    error, _ = terminal(422, body)
    assert isinstance(error, Unprocessable) and error.request_id == "req_3"
    assert error.details == []


def test_422_field_rejected_lists_rejected_fields() -> None:
    """Deep research's FIELD_REJECTED becomes one detail per rejected attribute."""
    body = {
        "success": False,
        "error": "field_rejected_by_policy",
        "error_code": "FIELD_REJECTED",
        "rejected_fields": {"ssn": "personal data"},
    }
    error, _ = terminal(422, body)
    assert isinstance(error, Unprocessable)
    assert error.details[0].field == "attributes.ssn"


def test_unknown_status_is_unexpected_response() -> None:
    """A status the spec does not list is terminal and says so."""
    error, _ = terminal(418, "teapot")
    assert isinstance(error, UnexpectedResponse) and error.status_code == 418


def test_body_echoing_the_key_is_redacted() -> None:
    """A server that echoes the key in an error body cannot put it in the message or body."""
    error, _ = terminal(403, {"error": f"key {KEY} revoked"})
    assert KEY not in str(error) and KEY not in repr(error.body)
    assert "…9f3a" in str(error)


def test_success_body_that_is_not_the_shape_is_unexpected() -> None:
    """A 200 whose body lacks required fields raises UnexpectedResponse, not a pydantic error."""
    script = Script([js(200, {"hello": "world"})])
    with pytest.raises(UnexpectedResponse, match="not a JobSubmitResponse"):
        mock_client(script, FakeTime()).submit_enrich_job([poi()])


def test_tolerant_parsing_keeps_unknown_enum_values() -> None:
    """Unknown fields are ignored and an unfamiliar status is kept as it is."""
    body = {**JOB_SUBMITTED, "status": "paused", "new_field": {"x": 1}}
    client = mock_client(Script([js(200, body)]), FakeTime())
    assert client.submit_enrich_job([poi()]).job.status == "paused"
