"""POST /v1/deep-research: estimates, budgets, policy rejections and per-field billing.

Besides what synth draws, the sandbox acts out the research behaviours a client must handle,
each switched by a knob (`research_knobs(backend)`), all off by default:

- `unavailable_next`: the next N requests answer 200 with every row abstained, stopped_reason
  `agent_unavailable`, nothing billed (also `FaultConfig.research_unavailable`, for all);
- `cost_cap_credits`: each request bills at most this many credits; fields past it come back
  `cost_capped` (not billed), their rows `cost_capped`, stopped_reason `cost_capped`;
- `rejected_fields`: those fields come back with field status `rejected` (not billed);
- `policy_fields`: those fields are refused by policy: 422 FIELD_REJECTED, nothing charged
  (fields named like personal data about individuals always are).

503 `operational_status_unavailable` and lost answers are the sandbox's request faults
(`inject("POST /v1/deep-research", "503" | "drop_response")`). Billing, the sandbox's choice
where the spec is silent: a row that errored is free; otherwise each field whose status is
confirmed, estimated or unconfirmed costs credits_per_field, and verify_identity adds one credit
to a row with an identity block. `research_stats(backend)` tells what was billed per place and
field, so tests can prove nothing was billed twice.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

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
BILLED_STATUSES = frozenset({"confirmed", "estimated", "unconfirmed"})
CREDITS_PER_FIELD = 1
CREDITS_PER_IDENTITY = 1


@dataclass
class ResearchKnobs:
    """Research behaviours to act out (all off by default)."""

    unavailable_next: int = 0
    cost_cap_credits: int | None = None
    rejected_fields: dict[str, str] = field(default_factory=dict)
    policy_fields: dict[str, str] = field(default_factory=dict)


@dataclass
class ResearchBook:
    """What the sandbox saw and billed for deep research since its last reset."""

    keys_ref: object
    knobs: ResearchKnobs = field(default_factory=ResearchKnobs)
    requests: Counter[str] = field(default_factory=Counter)
    billed: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(place id, field) -> times a credit was charged for it."""
    identity_billed: Counter[str] = field(default_factory=Counter)
    credits: int = 0


_BOOKS: weakref.WeakKeyDictionary[SandboxBackend, ResearchBook] = weakref.WeakKeyDictionary()
_BOOKS_LOCK = threading.Lock()


def _book(backend: SandboxBackend) -> ResearchBook:
    """The backend's research book; a reset (new key states) starts a new one."""
    with _BOOKS_LOCK:
        book = _BOOKS.get(backend)
        if book is None or book.keys_ref is not backend.keys:
            book = _BOOKS[backend] = ResearchBook(keys_ref=backend.keys)
        return book


def research_knobs(backend: SandboxBackend) -> ResearchKnobs:
    """The knobs of `backend`'s research behaviours, to set from a test."""
    return _book(backend).knobs


def research_stats(backend: SandboxBackend) -> dict[str, Any]:
    """Research requests by kind, credits charged, and places/fields billed more than once."""
    with backend.lock:
        book = _book(backend)
        return {
            "requests": dict(book.requests),
            "credits": book.credits,
            "billed_cells": sum(book.billed.values()),
            "billed_places": len({pid for pid, _ in book.billed}),
            "billed_twice": sorted(f"{p}:{f}" for (p, f), n in book.billed.items() if n > 1),
            "identity_billed_twice": sorted(p for p, n in book.identity_billed.items() if n > 1),
        }


def policy_rejections(request: DeepResearchRequest, extra: dict[str, str]) -> dict[str, str]:
    """Fields the service will not research: personal data about individuals."""
    found = {
        spec.name: "personal data about individuals is not researched"
        for spec in request.attributes
        if any(term in spec.name.lower() for term in POLICY_REJECTED_TERMS)
    }
    found.update({s.name: extra[s.name] for s in request.attributes if s.name in extra})
    return found


def _apply_knobs(
    rows: list[dict[str, Any]], request: DeepResearchRequest, knobs: ResearchKnobs
) -> tuple[int, bool]:
    """Mark rejected and cost-capped fields in place; the credits billed and whether capped."""
    left = knobs.cost_cap_credits
    total, capped_any = 0, False
    for row in rows:
        if row["status"] == "error" or row["fields"] is None:
            continue
        cells: dict[str, dict[str, Any]] = row["fields"]
        identity = 1 if request.verify_identity and row.get("identity") is not None else 0
        billed, capped = 0, False
        for name in cells:
            if name in knobs.rejected_fields:
                cells[name] = {"value": None, "confidence": None, "status": "rejected"}
                continue
            cost = CREDITS_PER_FIELD + (CREDITS_PER_IDENTITY * identity if billed == 0 else 0)
            if left is not None and cost > left:
                cells[name] = {"value": None, "confidence": None, "status": "cost_capped"}
                capped = True
                continue
            billed += cost
            if left is not None:
                left -= cost
        if capped:
            row["status"] = "cost_capped"
            capped_any = True
            if billed == 0:
                row["identity"] = None if request.verify_identity else row.get("identity")
        if not any(c["status"] == "confirmed" for c in cells.values()) and not capped:
            row["status"] = row["outcome"] = "abstain"
        total += billed
    return total, capped_any


def deep_research(backend: SandboxBackend, state: KeyState, raw: bytes) -> Reply:
    rid, now = backend.next_id("req"), backend.clock.now()
    req = parse_body(DeepResearchRequest, raw, request_id=rid, now=now)
    backend.require_entitlement(state, "research")
    book = _book(backend)
    knobs = book.knobs
    rejected = policy_rejections(req, knobs.policy_fields)
    if rejected:
        with backend.lock:
            book.requests["field_rejected"] += 1
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
        with backend.lock:
            book.requests["estimate_only"] += 1
        return answer([], "estimate_only")
    if req.max_credits is not None and estimate > req.max_credits:
        with backend.lock:
            book.requests["max_credits_exceeded"] += 1
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
            book.requests["quota_exceeded"] += 1
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
        if available and knobs.unavailable_next > 0:
            knobs.unavailable_next -= 1
            available = False
        rows, credits = synth.research_rows(
            processed, settings=backend.settings, agent_available=available
        )
        capped = False
        if available:
            credits, capped = _apply_knobs(rows, processed, knobs)
            _record(book, rows, processed)
        state.account.charge(credits, rid, now)
        book.credits += credits
        book.requests["answered" if available else "agent_unavailable"] += 1
    stopped = "agent_unavailable" if not available else "cost_capped" if capped else "completed"
    return answer(rows, stopped)


def _record(book: ResearchBook, rows: list[dict[str, Any]], req: DeepResearchRequest) -> None:
    for poi, row in zip(req.pois, rows, strict=True):
        if row["status"] == "error" or row["fields"] is None:
            continue
        pid = poi.id or poi.poi_name
        billed = [n for n, c in row["fields"].items() if c["status"] in BILLED_STATUSES]
        for name in billed:
            book.billed[(pid, name)] += 1
        if billed and req.verify_identity and row.get("identity") is not None:
            book.identity_billed[pid] += 1
