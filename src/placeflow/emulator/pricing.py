"""The rate card the sandbox serves at GET /v1/pricing: the spec's credit table as PricingRates."""

from __future__ import annotations

from typing import Any


def pricing_card(base_url: str) -> dict[str, Any]:
    def rate(
        key: str,
        label: str,
        credits: int | None,
        per: str,
        routes: list[str],
        hold: int | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        return {
            "key": key,
            "label": label,
            "credits": credits,
            "credits_range": None,
            "per": per,
            "hold": hold,
            "operator_owned": False,
            "routes": routes,
            "note": note,
        }

    return {
        "unit": "credits",
        "rates": [
            rate("validate", "Place validation", 1, "request", ["POST /v1/validate"]),
            rate(
                "enrich",
                "Place enrichment",
                1,
                "place",
                ["POST /v1/enrich", "POST /v1/enrich-batch"],
                note="include_summary does not change the price",
            ),
            rate(
                "job_validate",
                "Bulk validation job",
                1,
                "row",
                ["POST /v1/jobs/validate"],
                hold=1,
                note="1 credit per row held at submission; only billable rows are "
                "charged, the rest released; failed rows free",
            ),
            rate(
                "job_enrich",
                "Bulk enrichment job",
                1,
                "row",
                ["POST /v1/jobs/enrich"],
                hold=1,
                note="1 credit per row held at submission; only rows with a billable "
                "value or non-null status are charged, the rest released; failed rows free",
            ),
            rate(
                "deep_research_field",
                "Deep research",
                1,
                "place per attribute",
                ["POST /v1/deep-research"],
                note="abstained attributes are billed; nothing billed when research is unavailable",
            ),
            rate(
                "verify_identity",
                "Identity verification on deep research",
                1,
                "row",
                ["POST /v1/deep-research"],
                note="flat, regardless of attribute count",
            ),
            {
                **rate(
                    "call",
                    "Answered call",
                    10,
                    "answered call",
                    ["POST /calls"],
                    hold=30,
                    note="success_* outcomes only; failed_* cost 0",
                ),
                "credits_range": [0, 10],
            },
        ],
        "packs_url": base_url.rstrip("/") + "/checkout",
        "docs_url": None,
        "per_key_rates_url": None,
    }
