"""The typed client of the place and account endpoints: rate-limited, retrying, never paying twice.

    with PlaceApiClient(base_url="https://api.example", api_key=key) as api:
        job = api.submit_enrich_job(rows, idempotency_key=chunk_key)
        status = JobPoller(api).wait(job)

Every request waits for the shared `RateLimiter`, is retried only on a `TransientError`, and
carries the key only to the base URL's origin. Result files are fetched by a second HTTP client
that has no credentials at all (see `download.py`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from placeflow.api.attempts import Chain, PossibleDoubleCharge
from placeflow.api.errors import FieldProblem, RequestRejected, TransientError, UsageUnknown
from placeflow.api.limits import (
    Row,
    dump_rows,
    encode,
    require_json,
    require_one,
    require_rows,
)
from placeflow.api.models import (
    DeepResearchRequest,
    DeepResearchResponse,
    EnrichBatchRequest,
    EnrichJobSubmit,
    JobDeleteResponse,
    JobStatus,
    JobSubmitResponse,
    POIEnrichBatchResponse,
    POIEnrichRequest,
    POIEnrichResponse,
    POIValidateRequest,
    POIValidateResponse,
    PricingCard,
    UsageResponse,
    ValidateJobSubmit,
)
from placeflow.api.session import ApiSession
from placeflow.errors import OptionsError
from placeflow.fields import MAX_ENRICH_BATCH, MAX_JOB_ROWS, JobKind

__all__ = ["JobSubmission", "PlaceApiClient", "PossibleDoubleCharge"]

PRICING_TTL = 300.0
"""GET /v1/pricing is cacheable for five minutes."""


@dataclass(frozen=True)
class JobSubmission:
    """A submitted bulk job, the Idempotency-Key that replays it, and whether it was a replay."""

    job: JobSubmitResponse
    idempotency_key: str
    replayed: bool
    received_at: float | None = None
    """The client's clock when the answer came: with the answer's eta_completion_at, the
    poller's first sample of how true the service's etas are."""
    lost: int = 0
    """Attempts of this POST whose answer was lost after it may have reached the service: when
    any was, the job answered may be the original or, should the service have forgotten the
    key, new work (`replayed` is the service's hint; `pipeline.judge` decides)."""
    first_sent: float | None = None
    """When (the client's clock) the first attempt that may have reached the service left."""
    answered_sent: float | None = None
    """When (the client's clock) the attempt that was answered left."""

    @property
    def batch_id(self) -> str:
        return self.job.batch_id


class PlaceApiClient(ApiSession):
    """A thread-safe, synchronous client of the place-data service's place and account endpoints.

    Nothing is read from the environment: pass the base URL, the key, the tier's `limits` (or a
    `limiter` shared with other clients of the same key), timeouts and the retry policy. Pass an
    httpx `transport` to mount a sandbox in-process, and `clock`/`sleep` to make waiting virtual.
    """

    # --- place endpoints -----------------------------------------------------------------

    def validate(self, poi: Row, *, allow_double_charge: bool = False) -> POIValidateResponse:
        """POST /v1/validate (1 credit). See `OutcomeUnknown` for `allow_double_charge`."""
        request = require_one(POIValidateRequest, poi, endpoint="POST /v1/validate")
        response = self._call(
            "POST",
            "/v1/validate",
            body=encode(request),
            safety="charged",
            allow_double_charge=allow_double_charge,
            possible_credits=1,
        )
        return self._parse(POIValidateResponse, response, "POST /v1/validate")

    def enrich(self, poi: Row, *, allow_double_charge: bool = False) -> POIEnrichResponse:
        """POST /v1/enrich (1 credit)."""
        request = require_one(POIEnrichRequest, poi, endpoint="POST /v1/enrich")
        response = self._call(
            "POST",
            "/v1/enrich",
            body=encode(request),
            safety="charged",
            allow_double_charge=allow_double_charge,
            possible_credits=1,
        )
        return self._parse(POIEnrichResponse, response, "POST /v1/enrich")

    def enrich_batch(
        self, pois: Sequence[Row], *, allow_double_charge: bool = False
    ) -> POIEnrichBatchResponse:
        """POST /v1/enrich-batch: 1 to 10 places, 1 credit each; results[i] answers pois[i].

        The route has no Idempotency-Key: when the answer may have been lost after the request
        left (a reset, a timeout, a 502/504), `OutcomeUnknown` is raised and nothing is sent
        again; failures that surely never left, and answers that bill nothing (429, 500, 503),
        are retried. ``allow_double_charge=True`` re-sends blind and records a
        `PossibleDoubleCharge`; a pipeline should not use it (send the places as a job, or
        hold them as uncertain, instead).
        """
        endpoint = "POST /v1/enrich-batch"
        rows = require_rows(
            POIEnrichRequest, pois, endpoint=endpoint, minimum=1, maximum=MAX_ENRICH_BATCH
        )
        response = self._call(
            "POST",
            "/v1/enrich-batch",
            body=encode(EnrichBatchRequest(pois=rows)),
            safety="charged",
            allow_double_charge=allow_double_charge,
            possible_credits=len(rows),
        )
        return self._parse(POIEnrichBatchResponse, response, endpoint)

    def deep_research(
        self, request: DeepResearchRequest | Mapping[str, Any], *, allow_double_charge: bool = False
    ) -> DeepResearchResponse:
        """POST /v1/deep-research: per place per attribute, unanswered attributes billed too."""
        endpoint = "POST /v1/deep-research"
        parsed = require_one(DeepResearchRequest, request, endpoint=endpoint)
        response = self._call(
            "POST",
            "/v1/deep-research",
            body=encode(parsed),
            safety="charged",
            allow_double_charge=allow_double_charge,
            possible_credits=research_credits(parsed),
        )
        return self._parse(DeepResearchResponse, response, endpoint)

    # --- bulk jobs -----------------------------------------------------------------------

    def submit_job(
        self, kind: JobKind, pois: Sequence[Row], *, idempotency_key: str | None = None
    ) -> JobSubmission:
        """POST /v1/jobs/{kind} with 1 to 10,000 rows, always under an Idempotency-Key.

        Give the key when the work has an identity (the pipeline derives it from the run and
        the chunk's content) so that a resumed process replays instead of paying again; without
        one, a fresh key is made and reused for every retry of this submission.
        """
        endpoint = _job_endpoint(kind)
        model: type[BaseModel] = POIValidateRequest if kind == "validate" else POIEnrichRequest
        rows = require_rows(model, pois, endpoint=endpoint, minimum=1, maximum=MAX_JOB_ROWS)
        body = encode({"pois": dump_rows(rows)})
        return self._submit(kind, body, idempotency_key=idempotency_key)

    def submit_job_body(
        self,
        kind: JobKind,
        body: bytes,
        *,
        idempotency_key: str | None = None,
        checked: bool = False,
        replay_window: float | None = None,
        sent_at: float | None = None,
        possible_credits: int = 0,
    ) -> JobSubmission:
        """POST /v1/jobs/{kind} with a body already encoded as ``{"pois": [...]}``.

        For callers that store their requests as JSON (the pipeline does, so that a resumed
        run sends the identical bytes): the body is held to the spec's limits as parsed JSON,
        in one pass, and sent exactly as given. A bad row raises `RequestRejected` naming it
        (``pois[17].poi_name``); nothing is sent.

        ``checked=True`` is for a body whose every row was already held to the limits where
        it was made (the pipeline's plan builds its requests from columns checked against
        the stricter POIValidateRequest): parsing 10,000 rows again costs about 0.1 CPU s a
        chunk, so it is sent unparsed. Should such a row still break a limit, the service
        refuses the whole job with a 400 naming it, and charges nothing.

        A lost answer is replayed at once a few times (`PromptRetry`). ``replay_window``
        (seconds) is for a caller that asks the usage before any further re-send: past the
        prompt tries `OutcomeUnknown` is raised (with ``possible_credits`` and its
        `first_sent`), and no replay leaves later than the window after the first attempt
        that may have reached the service (or ``sent_at``, this client's clock, when an earlier
        call or process sent it), since a service that forgot the key would create a second
        job. Without it, replays go on with backoff.
        """
        endpoint = _job_endpoint(kind)
        if not checked:
            require_json(JOB_SUBMIT_MODELS[kind], body, endpoint=endpoint)
        return self._submit(
            kind, body, idempotency_key=idempotency_key, replay_window=replay_window,
            sent_at=sent_at, possible_credits=possible_credits,
        )  # fmt: skip

    def _submit(
        self,
        kind: JobKind,
        body: bytes,
        *,
        idempotency_key: str | None,
        replay_window: float | None = None,
        sent_at: float | None = None,
        possible_credits: int = 0,
    ) -> JobSubmission:
        endpoint = _job_endpoint(kind)
        key = idempotency_key if idempotency_key is not None else f"pf-{uuid.uuid4().hex}"
        check_idempotency_key(key, endpoint=endpoint)
        chain = Chain()
        response = self._call(
            "POST",
            f"/v1/jobs/{kind}",
            body=body,
            safety="keyed",
            idempotency_key=key,
            replay_window=replay_window,
            sent_at=sent_at,
            possible_credits=possible_credits,
            chain=chain,
        )
        job = self._parse(JobSubmitResponse, response, endpoint)
        replayed = response.headers.get("Idempotent-Replayed", "").lower() == "true"
        return JobSubmission(
            job=job, idempotency_key=key, replayed=replayed, received_at=self.clock(),
            lost=chain.lost, first_sent=chain.first_sent, answered_sent=chain.answered_sent,
        )  # fmt: skip

    def submit_validate_job(
        self, pois: Sequence[Row], *, idempotency_key: str | None = None
    ) -> JobSubmission:
        return self.submit_job("validate", pois, idempotency_key=idempotency_key)

    def submit_enrich_job(
        self, pois: Sequence[Row], *, idempotency_key: str | None = None
    ) -> JobSubmission:
        return self.submit_job("enrich", pois, idempotency_key=idempotency_key)

    def job_status(self, batch_id: str) -> JobStatus:
        """GET /v1/jobs/{batch_id}: one poll (it counts against the rate limit like any request)."""
        path = f"/v1/jobs/{quote(batch_id, safe='')}"
        response = self._call("GET", path, safety="safe")
        return self._parse(JobStatus, response, f"GET {path}")

    def cancel_job(self, batch_id: str) -> JobDeleteResponse:
        """DELETE /v1/jobs/{batch_id}: processed rows stay billed, the rest are not charged.

        The spec does not show the answer's body, so any 2xx is a cancel the service accepted:
        an empty body, or one without `cancelled`, parses (see `JobDeleteResponse.accepted`).
        Poll the job afterwards for its final status and processed rows.
        """
        path = f"/v1/jobs/{quote(batch_id, safe='')}"
        response = self._call("DELETE", path, safety="safe")
        if not response.content.strip():
            return JobDeleteResponse(batch_id=batch_id)
        return self._parse(JobDeleteResponse, response, f"DELETE {path}")

    # --- account -------------------------------------------------------------------------

    def usage(self, *, urgent: bool = False) -> UsageResponse:
        """GET /v1/usage: credits available now, net of in-flight holds.

        An accounting call: retried with `accounting_retry` (minutes of patience, not the
        request policy's seconds). When no figure comes within it, `UsageUnknown` is raised:
        the caller records the usage as unknown instead of failing work already done.
        `urgent`: asked between a lost POST's replays, it takes the next rate-limit slot.
        """
        try:
            response = self._call(
                "GET", "/v1/usage", safety="safe", retry=self.accounting_retry, urgent=urgent
            )
        except TransientError as exc:
            raise UsageUnknown(
                f"GET /v1/usage: no usage figure after {exc.attempts} attempt(s) ({exc}); "
                "record the usage as unknown and check it later.",
                cause=exc,
            ) from exc
        return self._parse(UsageResponse, response, "GET /v1/usage")

    def pricing(self, *, refresh: bool = False) -> PricingCard:
        """GET /v1/pricing (no key sent), cached for the five minutes the spec allows."""
        with self._lock:
            cached = self._pricing
        if cached and not refresh and self.clock() - cached[0] < PRICING_TTL:
            return cached[1]
        response = self._call("GET", "/v1/pricing", safety="safe", authenticate=False)
        card = self._parse(PricingCard, response, "GET /v1/pricing")
        with self._lock:
            self._pricing = (self.clock(), card)
        return card


JOB_SUBMIT_MODELS: dict[str, type[BaseModel]] = {
    "validate": ValidateJobSubmit,
    "enrich": EnrichJobSubmit,
}


def _job_endpoint(kind: str) -> str:
    if kind not in JOB_SUBMIT_MODELS:
        raise OptionsError(f"kind must be validate or enrich, not {kind!r}")
    return f"POST /v1/jobs/{kind}"


def research_credits(request: DeepResearchRequest) -> int:
    """The most a deep-research request can charge: per place per attribute, plus identity."""
    if request.estimate_only:
        return 0
    places = min(len(request.pois), request.sample or len(request.pois))
    per_place = len(request.attributes) + int(request.validate_existence)
    return places * (per_place + int(request.verify_identity))


def check_idempotency_key(key: str, *, endpoint: str) -> None:
    """An Idempotency-Key must be 1 to 255 visible ASCII characters."""
    if not 1 <= len(key) <= 255 or not all(33 <= ord(c) <= 126 for c in key):
        problem = FieldProblem(
            "Idempotency-Key", "must be 1 to 255 visible ASCII characters", "idempotency_key"
        )
        raise RequestRejected(endpoint, [problem])
