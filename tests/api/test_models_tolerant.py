"""Responses parse tolerantly: unknown fields are ignored, unfamiliar enum values are kept."""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from placeflow.api.models import JobStatus, POIEnrichResponse, POIValidateResponse

names = st.text(st.characters(categories=("Ll",)), min_size=3, max_size=12)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
extras = st.dictionaries(names.map(lambda n: f"x_{n}"), scalars, max_size=4)
words = st.text(st.characters(categories=("Ll",)), min_size=1, max_size=15)


@settings(max_examples=80, deadline=None)
@given(extra=extras, status=words, reason=words, confidence=words)
def test_validate_response_keeps_unknown_values(
    extra: dict[str, Any], status: str, reason: str, confidence: str
) -> None:
    """Unknown fields anywhere are ignored; any status or reason string is kept as sent."""
    body = {
        "success": True,
        "id": "p1",
        "existence_confidence": 0.5,
        **extra,
        "operational_status": {
            "status": status,
            "closure_confidence": None,
            "closure_reason": reason,
            **extra,
        },
    }
    parsed = POIValidateResponse.model_validate(body)
    assert parsed.operational_status is not None
    assert (parsed.operational_status.status, parsed.operational_status.closure_reason) == (
        status,
        reason,
    )


@settings(max_examples=80, deadline=None)
@given(extra=extras, attribute=words, confidence=words, cell_status=words)
def test_enrich_response_keeps_unfamiliar_attributes_and_statuses(
    extra: dict[str, Any], attribute: str, confidence: str, cell_status: str
) -> None:
    """An attribute or confidence the client never heard of is kept, not rejected."""
    body = {
        "success": True,
        "attributes": {
            attribute: {
                "value": {"any": 1},
                "as_of": None,
                "confidence": confidence,
                "status": cell_status,
                **extra,
            }
        },
        "status": {"existence_confidence": None, **extra},
        **extra,
    }
    parsed = POIEnrichResponse.model_validate(body)
    assert parsed.attributes is not None
    cell = parsed.attributes[attribute]
    assert cell is not None and (cell.confidence, cell.status) == (confidence, cell_status)


@settings(max_examples=50, deadline=None)
@given(extra=extras, state=words)
def test_job_status_keeps_an_unfamiliar_state(extra: dict[str, Any], state: str) -> None:
    """A job status the spec does not list is kept; it is simply not terminal."""
    parsed = JobStatus.model_validate(
        {"batch_id": "job_1", "status": state, "created_at": "t", "total_items": 1, **extra}
    )
    assert parsed.status == state
    assert parsed.terminal == (state in ("completed", "failed", "cancelled"))


def test_server_strings_are_capped_with_a_marker() -> None:
    """A 20 MB `error` in an answer, or in an error body, is kept to 2,000 characters and
    says how much was cut."""
    from placeflow.api.failures import error_from_response
    from placeflow.api.models import MAX_SERVER_TEXT, POIValidateResponse

    huge = "x" * 20_000_000
    parsed = POIValidateResponse.model_validate({"success": False, "error": huge})
    assert parsed.error is not None and len(parsed.error) < MAX_SERVER_TEXT + 60
    assert parsed.error.endswith("[truncated 19,998,000 characters]")
    response = httpx.Response(400, json={"error": huge, "error_code": "VALIDATION_ERROR"})
    error = error_from_response(response, endpoint="POST /v1/validate", now=0.0, secrets=())
    assert len(str(error)) < 3 * MAX_SERVER_TEXT and len(str(error.body)) <= 20_100  # type: ignore[attr-defined]  # an ApiError
