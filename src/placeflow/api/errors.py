"""Every way a call to the place-data service can fail, as one exception tree.

    PlaceflowError                      root (placeflow.errors, where the whole tree is drawn)
    ├── RequestRejected                 refused before sending: a row breaks the spec's limits
    ├── TransientError                  may succeed if retried; carries `wait` when the server said
    │   ├── RateLimited                 429: `wait` from Retry-After
    │   ├── ServiceUnavailable          503: `wait` from Retry-After or the maintenance resume_at
    │   ├── ServerError                 500 and other 5xx
    │   ├── ConnectionLost              connection refused, reset or dropped; `maybe_sent`
    │   │   └── RequestTimedOut         no answer within the timeout
    │   └── UsageUnknown                GET /v1/usage gave no figure within the run's patience
    ├── ApiError                        terminal: retrying the same request cannot help
    │   ├── BadRequest                  400: `details` per field (`pois[17].poi_name`)
    │   ├── Unauthorized                401: missing or invalid key
    │   ├── InsufficientCredits         402: `needed`, `available`
    │   ├── Forbidden                   403: key revoked, or not entitled to the endpoint
    │   ├── NotFound                    404
    │   ├── IdempotencyConflict         409: `idempotency_key` reused with a different body
    │   ├── Unprocessable               422: `details`
    │   ├── UnexpectedResponse          any other status, or a body that is not the spec's
    │   ├── OutcomeUnknown              a charged request may have been processed, no answer came
    │   ├── JobFailed                   a bulk job ended failed: `batch_id`, `error_code`
    │   └── JobTimedOut                 jobs outlived the poller's timeout: `batch_ids`, `cancelled`
    └── DownloadError                   a result file could not be fetched and verified
        ├── ResultUnavailable           no file, or its URL kept being refused
        ├── ResultVerificationError     sha256, size, gzip or line count wrong after every attempt
        └── ResultTooLarge              decompressed beyond the cap: a hostile or broken file

Retry only `TransientError`; everything else is raised at once. Messages say what to do next
and never contain the API key (at most its hint, ``…a1b2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placeflow.api.models import JobStatus
from placeflow.errors import PlaceflowError as PlaceflowError  # the root, re-exported


@dataclass(frozen=True)
class FieldProblem:
    """One reason a request is invalid: `field` is a path such as ``pois[17].poi_name``."""

    field: str
    message: str
    type: str = "value_error"

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def summarise_details(details: list[FieldProblem], limit: int = 5) -> str:
    shown = "; ".join(str(d) for d in details[:limit])
    more = len(details) - limit
    return shown + (f"; and {more} more" if more > 0 else "")


class RequestRejected(PlaceflowError):
    """The request breaks the spec's limits; it was not sent and nothing was charged."""

    def __init__(self, endpoint: str, details: list[FieldProblem]) -> None:
        self.endpoint = endpoint
        self.details = details
        super().__init__(
            f"{endpoint} not sent: {len(details)} invalid field(s): {summarise_details(details)}. "
            "Fix or drop these rows and submit again."
        )

    @property
    def rows(self) -> list[int]:
        """Indexes of the offending rows of a ``pois`` list, in order, without repeats."""
        out: list[int] = []
        for d in self.details:
            if d.field.startswith("pois["):
                index = int(d.field[5 : d.field.index("]")])
                if index not in out:
                    out.append(index)
        return out


InvalidRequest = RequestRejected


# --- transient ----------------------------------------------------------------------------


class UnsafeRedirect(PlaceflowError):
    """A result-file host redirected somewhere a download must not go."""


class TransientError(PlaceflowError):
    """Worth retrying later. `wait` is the server's requested delay in seconds, if it gave one."""

    def __init__(self, message: str, *, endpoint: str = "", wait: float | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.wait = wait
        self.attempts = 1


class RateLimited(TransientError):
    """429: the key's rate limit was exceeded."""


class ServiceUnavailable(TransientError):
    """503: temporarily unavailable or in maintenance until `resume_at`."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str = "",
        wait: float | None = None,
        resume_at: str | None = None,
    ) -> None:
        super().__init__(message, endpoint=endpoint, wait=wait)
        self.resume_at = resume_at


class ServerError(TransientError):
    """500 or another 5xx. For 502/504 a gateway gave up, so the request may have run."""

    def __init__(self, message: str, *, endpoint: str = "", status_code: int = 500) -> None:
        super().__init__(message, endpoint=endpoint)
        self.status_code = status_code

    @property
    def maybe_sent(self) -> bool:
        return self.status_code in (502, 504)


class ConnectionLost(TransientError):
    """The connection failed. `maybe_sent` is False only when the request surely never left."""

    def __init__(self, message: str, *, endpoint: str = "", maybe_sent: bool = True) -> None:
        super().__init__(message, endpoint=endpoint)
        self.maybe_sent = maybe_sent


class RequestTimedOut(ConnectionLost):
    """No response within the client's timeout."""


# --- terminal -----------------------------------------------------------------------------


class ApiError(PlaceflowError):
    """Terminal: the service answered with an error that retrying the same request cannot fix."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str = "",
        status_code: int | None = None,
        error_code: str | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status_code = status_code
        self.error_code = error_code
        self.request_id = request_id
        self.body = body


class _WithDetails(ApiError):
    def __init__(self, message: str, *, details: list[FieldProblem], **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.details = details


class BadRequest(_WithDetails):
    """400: the service refused the request; `details` name each bad field."""


class Unprocessable(_WithDetails):
    """422: well-formed but unusable (for example coordinates that resolve nowhere)."""


class Unauthorized(ApiError):
    """401: the key is missing or invalid."""


class Forbidden(ApiError):
    """403: the key is revoked, suspended, or not entitled to this endpoint."""


class NotFound(ApiError):
    """404: no such resource for this key."""


class InsufficientCredits(ApiError):
    """402: the available balance cannot cover the request."""

    def __init__(
        self, message: str, *, needed: int | None, available: int | None, **kwargs: Any
    ) -> None:
        super().__init__(message, **kwargs)
        self.needed = needed
        self.available = available


class IdempotencyConflict(ApiError):
    """409: the Idempotency-Key was already used with a different body."""

    def __init__(self, message: str, *, idempotency_key: str | None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.idempotency_key = idempotency_key


class UnexpectedResponse(ApiError):
    """A status the spec does not give for this endpoint, or a body that does not parse."""


class OutcomeUnknown(ApiError):
    """A charged request may have reached the service, but no answer came back.

    It was not retried because a retry may be charged again; `possible_credits` is what the
    lost attempt may have cost. Pass ``allow_double_charge=True`` to retry such requests. For a
    keyed job POST, `first_sent` is when (the client's clock) the first attempt that may have
    reached the service left: the caller asks the usage before it sends it again.
    """

    def __init__(
        self,
        message: str,
        *,
        possible_credits: int,
        first_sent: float | None = None,
        lost: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.possible_credits = possible_credits
        self.first_sent = first_sent
        self.lost = lost
        """Attempts of this call whose answer was lost after they may have reached it."""


class JobFailed(ApiError):
    """A bulk job ended with status failed."""

    def __init__(self, status: JobStatus) -> None:
        self.batch_id = status.batch_id
        self.status = status
        processed = status.progress.processed if status.progress else 0
        super().__init__(
            f"job {status.batch_id} failed ({status.error_code or 'no error_code'}): "
            f"{status.error or 'no reason given'}; {processed} of {status.total_items} rows "
            "processed. Unprocessed rows are not charged; submit them again as a new job "
            "with a new Idempotency-Key.",
            error_code=status.error_code,
        )


class JobTimedOut(ApiError):
    """Jobs still unfinished when the poller's timeout ran out; `cancelled` if all were deleted."""

    def __init__(
        self,
        batch_ids: list[str],
        *,
        timeout: float,
        not_cancelled: list[str],
        last_status: dict[str, JobStatus | None],
        finished: dict[str, JobStatus],
    ) -> None:
        self.batch_ids = tuple(batch_ids)
        self.timeout = timeout
        self.not_cancelled = tuple(not_cancelled)
        self.last_status = last_status
        self.finished = finished
        action = (
            "cancelled them with DELETE (processed rows stay billed and downloadable)"
            if not not_cancelled
            else f"did not cancel {', '.join(not_cancelled)}: poll them, and DELETE any still "
            "running before resubmitting"
        )
        super().__init__(
            f"{len(batch_ids)} job(s) not finished after {timeout:g} s "
            f"({', '.join(batch_ids)}); {action}. Poll with a longer timeout or submit smaller "
            "jobs."
        )

    @property
    def batch_id(self) -> str:
        return self.batch_ids[0]

    @property
    def cancelled(self) -> bool:
        return not self.not_cancelled


# --- downloads ----------------------------------------------------------------------------


class DownloadError(PlaceflowError):
    """A job's result file could not be fetched and verified."""

    def __init__(self, message: str, *, batch_id: str) -> None:
        super().__init__(message)
        self.batch_id = batch_id


class ResultUnavailable(DownloadError):
    """The job has no result file, or its URL was refused even after fetching a fresh one."""


class ResultVerificationError(DownloadError):
    """The file did not match `results.files[]` or the job's row count, on every attempt."""

    def __init__(
        self,
        message: str,
        *,
        batch_id: str,
        expected_sha256: str,
        actual_sha256: str | None,
        expected_size: int,
        actual_size: int | None,
        expected_lines: int,
        actual_lines: int | None,
        attempts: int,
    ) -> None:
        super().__init__(message, batch_id=batch_id)
        self.expected_sha256 = expected_sha256
        self.actual_sha256 = actual_sha256
        self.expected_size = expected_size
        self.actual_size = actual_size
        self.expected_lines = expected_lines
        self.actual_lines = actual_lines
        self.attempts = attempts


class ResultTooLarge(DownloadError):
    """The file decompresses beyond `limit` bytes; it was deleted unread."""

    def __init__(self, message: str, *, batch_id: str, limit: int) -> None:
        super().__init__(message, batch_id=batch_id)
        self.limit = limit


class UsageUnknown(TransientError):
    """GET /v1/usage gave no figure within the run's patience (the accounting retry budget).

    Work already done stands: record the usage figure as unknown (and the ledger unbalanced
    for now), never as a failure of the run. `cause` is the last error seen.
    """

    def __init__(self, message: str, *, endpoint: str = "GET /v1/usage", cause: Exception) -> None:
        super().__init__(message, endpoint=endpoint)
        self.cause = cause
