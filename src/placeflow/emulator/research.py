"""POST /v1/deep-research: estimates, budgets, policy rejections and per-field billing."""

from __future__ import annotations

from placeflow.api.models import DeepResearchRequest
from placeflow.emulator import synth
from placeflow.emulator.backend import KeyState, SandboxBackend
from placeflow.emulator.ledger import InsufficientCredits
from placeflow.emulator.responses import CHECKOUT_PATH, Reply, ServiceError, iso, parse_body

POLICY_REJECTED_TERMS = (
    "ssn",
    "social_security",
    "password",
    "date_of_birth",
    "home_address",
    "religion",
    "medical",
    "health_condition",
    "passport",
)


def policy_rejections(request: DeepResearchRequest) -> dict[str, str]:
    """Fields the service will not research: personal data about individuals."""
    return {
        spec.name: "personal data about individuals is not researched"
        for spec in request.attributes
        if any(term in spec.name.lower() for term in POLICY_REJECTED_TERMS)
    }


def deep_research(backend: SandboxBackend, state: KeyState, raw: bytes) -> Reply:
    rid, now = backend.next_id("req"), backend.clock.now()
    req = parse_body(DeepResearchRequest, raw, request_id=rid, now=now)
    backend.require_entitlement(state, "research")
    rejected = policy_rejections(req)
    if rejected:
        raise ServiceError(
            422,
            {
                "success": False,
                "error": "field_rejected_by_policy",
                "error_code": "FIELD_REJECTED",
                "rejected_fields": rejected,
                "request_id": rid,
                "validation_timestamp": iso(now),
            },
        )
    estimate = synth.research_estimate(req)

    def answer(rows: list[dict[str, object]], stopped: str) -> Reply:
        return Reply(
            200,
            {
                "success": True,
                "rows": rows,
                "meta": {"stopped_reason": stopped, "estimated_credits": estimate},
                "enrichment_timestamp": iso(now),
                "error": None,
                "error_code": None,
                "request_id": rid,
            },
        )

    if req.estimate_only:
        return answer([], "estimate_only")
    if req.max_credits is not None and estimate > req.max_credits:
        raise ServiceError(
            402,
            {
                "detail": {
                    "success": False,
                    "error": "max_credits_exceeded",
                    "detail": f"estimated {estimate} credits exceeds max_credits {req.max_credits}",
                    "estimated_credits": estimate,
                }
            },
        )
    processed = req.model_copy(update={"pois": req.pois[: req.sample]}) if req.sample else req
    with backend.lock:
        try:
            state.account.require(estimate)
        except InsufficientCredits as exc:
            raise ServiceError(
                402,
                {
                    "detail": {
                        "error": "quota_exceeded",
                        "needed_credits": exc.needed,
                        "checkout_url": backend.base_url + CHECKOUT_PATH,
                    }
                },
            ) from None
        available = not backend.faults.config.research_unavailable
        rows, credits = synth.research_rows(
            processed, settings=backend.settings, agent_available=available
        )
        state.account.charge(credits, rid, now)
    return answer(rows, "completed" if available else "agent_unavailable")
