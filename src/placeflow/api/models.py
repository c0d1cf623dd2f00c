"""Shapes of the place-data service, shared by the client and the sandbox.

Requests are strict: they carry the spec's limits, so the client rejects a bad row before
sending it and the sandbox answers it with 400. Responses are tolerant: unknown fields are
ignored and enum-like fields are plain strings, so an unfamiliar value is kept, never rejected.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from placeflow.fields import (
    MAX_ENRICH_BATCH,
    MAX_JOB_ROWS,
    EnrichAttribute,
)
from placeflow.support.text import MAX_SERVER_TEXT as MAX_SERVER_TEXT  # re-exported
from placeflow.support.text import CappedText
from placeflow.support.text import cap_text as cap_text  # re-exported

# --- vocabulary -------------------------------------------------------------------------

WEEKDAYS: tuple[str, ...] = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)
OPERATIONAL_STATUSES: tuple[str, ...] = ("open", "closed", "unknown", "not_exists")
CLOSURE_REASONS: tuple[str, ...] = (
    "permanent",
    "temporary",
    "relocated",
    "replaced",
    "dissolved",
    "unspecified",
)
CONFIDENCE_LEVELS: tuple[str, ...] = ("high", "medium", "low")
CELL_STATUSES: tuple[str, ...] = (
    "confirmed",
    "estimated",
    "unconfirmed",
    "cost_capped",
    "rejected",
)
JOB_STATUSES: tuple[str, ...] = ("queued", "running", "completed", "failed", "cancelled")
TERMINAL_JOB_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
MAX_RESEARCH_PLACES = 10
MAX_RESEARCH_ATTRIBUTES = 20

# --- requests (strict) -------------------------------------------------------------------


class _Request(BaseModel):
    """Requests ignore unknown fields (as the service does) but hold every stated limit."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, allow_inf_nan=False, defer_build=True
    )


Latitude = Annotated[float | None, Field(default=None, ge=-90, le=90)]
Longitude = Annotated[float | None, Field(default=None, ge=-180, le=180)]
Country = Annotated[str | None, Field(default=None, pattern=r"^[A-Za-z]{2}$")]


class _POIIdentity(_Request):
    id: str | None = Field(default=None, max_length=100)
    poi_name: str = Field(min_length=1, max_length=200)
    country: Country = None
    address: str | None = Field(
        default=None,
        max_length=500,
        validation_alias=AliasChoices("address", "freeform_address"),
    )
    latitude: Latitude = None
    longitude: Longitude = None


class POIValidateRequest(_POIIdentity):
    street: str | None = Field(default=None, max_length=300)
    city: str | None = Field(default=None, max_length=200)
    region: str | None = Field(default=None, max_length=200)
    postcode: str | None = Field(default=None, max_length=40)


class POIEnrichRequest(_POIIdentity):
    # The spec states no length limits for these four on enrich.
    street: str | None = None
    city: str | None = None
    region: str | None = None
    postcode: str | None = None
    # A closed vocabulary checked in pydantic's core: a job of 10,000 rows is checked in one
    # pass, with no Python call per row.
    attributes: list[EnrichAttribute] | None = Field(default=None, min_length=1, max_length=9)
    include_summary: bool = False
    response_format: Literal["attributes", "cell"] = "attributes"


class EnrichBatchRequest(_Request):
    pois: list[POIEnrichRequest] = Field(min_length=1, max_length=MAX_ENRICH_BATCH)


class ValidateJobSubmit(_Request):
    pois: list[POIValidateRequest] = Field(min_length=1, max_length=MAX_JOB_ROWS)


class EnrichJobSubmit(_Request):
    pois: list[POIEnrichRequest] = Field(min_length=1, max_length=MAX_JOB_ROWS)


class DeepResearchPOI(_POIIdentity):
    street: str | None = None
    city: str | None = None
    region: str | None = None
    postcode: str | None = None


class DeepResearchFieldSpec(_Request):
    name: str = Field(min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=500)
    value_type: Literal["bool", "enum", "string", "number"] | None = None
    allowed_values: list[str] | None = None


class DeepResearchRequest(_Request):
    pois: list[DeepResearchPOI] = Field(min_length=1, max_length=MAX_RESEARCH_PLACES)
    attributes: list[DeepResearchFieldSpec] = Field(
        min_length=1, max_length=MAX_RESEARCH_ATTRIBUTES
    )
    validate_existence: bool = False
    verify_identity: bool = False
    estimate_only: bool = False
    sample: int | None = Field(default=None, ge=1)
    max_credits: int | None = Field(default=None, ge=0)


# --- responses (tolerant) ----------------------------------------------------------------


class _Response(BaseModel):
    """Responses keep what they know and ignore the rest; enum-like fields stay strings."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class OperationalStatusBlock(_Response):
    status: str
    closure_confidence: float | None = None
    closure_reason: CappedText | None = None


class POIValidateResponse(_Response):
    success: bool
    id: str | None = None
    existence_confidence: float | None = None
    operational_status: OperationalStatusBlock | None = None
    error: CappedText | None = None
    error_code: str | None = None
    request_id: str | None = None
    validation_timestamp: str | None = None


class AttributeResult(_Response):
    """An EnrichedAttribute (value, as_of, confidence) or a ResultCell (value, confidence,
    status): one tolerant shape for both response formats."""

    value: Any = None
    as_of: str | None = None
    confidence: str | None = None
    status: str | None = None


class EnrichStatus(_Response):
    existence_confidence: float | None = None


class POIEnrichResponse(_Response):
    success: bool
    id: str | None = None
    attributes: dict[str, AttributeResult | None] | None = None
    status: EnrichStatus | None = None
    operational_status: OperationalStatusBlock | None = None
    place_summary: CappedText | None = None
    enrichment_timestamp: str | None = None
    error: CappedText | None = None
    error_code: str | None = None
    request_id: str | None = None


class BatchStats(_Response):
    total: int = 0
    successful: int = 0
    failed: int = 0


class POIEnrichBatchResponse(_Response):
    success: bool
    results: list[POIEnrichResponse] = Field(default_factory=list)
    stats: BatchStats | None = None
    enrichment_timestamp: str | None = None


class JobSubmitResponse(_Response):
    """ValidationJobSubmitResponse: the answer to POST /v1/jobs/{validate,enrich}."""

    batch_id: str
    type: str | None = None
    status: str
    created_at: str
    total_items: int
    eta_seconds: int | None = None
    eta_completion_at: str | None = None


class JobProgress(_Response):
    processed: int = 0
    succeeded: int = 0
    failed: int = 0


class JobResultFile(_Response):
    url: str
    size_bytes: int
    sha256: str
    expires_at: str


class JobResults(_Response):
    format: str = "jsonl.gz"
    total_items: int
    files: list[JobResultFile] = Field(default_factory=list)


class JobStatus(_Response):
    """ValidationJobStatus: the answer to GET /v1/jobs/{batch_id}."""

    batch_id: str
    status: str
    created_at: str
    total_items: int
    type: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    progress: JobProgress | None = None
    eta_seconds: int | None = None
    eta_completion_at: str | None = None
    results: JobResults | None = None
    error: CappedText | None = None
    error_code: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES

    @property
    def files_pending(self) -> bool:
        """Ended with rows processed (completed; or cancelled or failed part way, its processed
        rows kept and billed) and no result file shown yet. When a service publishes the files
        of a job that ended is not shown: they may follow the status."""
        if not self.terminal or (self.results and self.results.files):
            return False
        if self.progress is not None:
            return self.progress.processed > 0
        return self.status == "completed" and self.total_items > 0


class JobDeleteResponse(_Response):
    """The answer to DELETE /v1/jobs/{batch_id}. The spec does not show its body, so nothing
    in it is required: the sandbox sends batch_id, status, cancelled and message; another
    service may send less, or nothing (a 2xx is the acceptance)."""

    batch_id: str | None = None
    status: str | None = None
    cancelled: bool | None = None
    message: CappedText | None = None

    @property
    def accepted(self) -> bool:
        """The cancel was accepted: not an explicit ``cancelled: false`` for a job that had
        already ended (its status then names how it ended)."""
        if self.cancelled is not None:
            return self.cancelled or self.status == "cancelled"
        return self.status is None or self.status not in ("completed", "failed")


class UsageResponse(_Response):
    tier: str
    api_key_id: str
    customer_id: str
    key_hint: str | None = None
    key_created_at: str | None = None
    customer_name: str
    quota_limit: int
    current_usage: int
    remaining: int
    available: int | None = None
    call_credit_hold: int | None = None
    max_places: int | None = None
    places_used: int | None = None
    contact_email: str | None = None
    credits_per_field: int | None = None
    credits_per_place: int | None = None
    open_invoices: list[dict[str, Any]] | None = None
    percentage_used: float
    reset_date: str
    period: str
    status: str
    validation_timestamp: str | None = None

    @property
    def spendable(self) -> int:
        """Credits spendable now: `available` when given, else `remaining` (they are equal)."""
        return self.available if self.available is not None else self.remaining


class PricingRate(_Response):
    key: str
    label: str
    credits: int | None = None
    credits_range: list[int] | None = None
    per: str
    hold: int | None = None
    operator_owned: bool = False
    routes: list[str] | None = None
    note: CappedText | None = None


class PricingCard(_Response):
    unit: str
    rates: list[PricingRate]
    packs_url: str
    docs_url: str | None = None
    per_key_rates_url: str | None = None

    def rate(self, key: str) -> PricingRate | None:
        return next((r for r in self.rates if r.key == key), None)


class ErrorResponse(_Response):
    success: bool = False
    error: CappedText
    error_code: str | None = None
    request_id: str | None = None
    validation_timestamp: str | None = None
    detail: Any = None


class ResultCell(_Response):
    value: Any = None
    confidence: str | None = None
    status: str


class DeepResearchRow(_Response):
    id: str | None = None
    poi_name: str | None = None
    identity: dict[str, Any] | None = None
    status: str
    outcome: str | None = None
    fields: dict[str, ResultCell] | None = None
    """The cells shaped as a ResultCell (an object with a string `status`); an entry of
    another shape (a field nobody asked for, `x_ext: {...}`) is ignored, never a reason to
    throw away an answer the service has billed (`_cells`)."""
    error: CappedText | None = None

    @field_validator("fields", mode="before")
    @classmethod
    def _cells(cls, value: Any) -> Any:
        """The entries of `fields` a ResultCell can hold; others left out."""
        if not isinstance(value, dict):
            return value
        return {
            name: cell
            for name, cell in value.items()
            if isinstance(cell, dict) and isinstance(cell.get("status"), str)
        }


class DeepResearchMeta(_Response):
    stopped_reason: str | None = None
    estimated_credits: int | None = None


class DeepResearchResponse(_Response):
    success: bool
    rows: list[DeepResearchRow] = Field(default_factory=list)
    meta: DeepResearchMeta | None = None
    enrichment_timestamp: str | None = None
    error: CappedText | None = None
    error_code: str | None = None
    request_id: str | None = None
