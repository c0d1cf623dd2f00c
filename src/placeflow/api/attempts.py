"""One request's attempts: how they went (`Chain`), a retry that may charge twice
(`PossibleDoubleCharge`), and the checks `ApiSession._call` makes between attempts."""

from __future__ import annotations

from dataclasses import dataclass

from placeflow.api.errors import ConnectionLost, OutcomeUnknown, ServerError, TransientError


@dataclass
class Chain:
    """How one request's attempts went, for a caller that judges the answer: `lost`, the
    attempts whose answer was lost after the request may have reached the service;
    `first_sent`, when (the client's clock) the first of them left (or the caller's
    `sent_at`); `answered_sent`, when the attempt that was answered left."""

    lost: int = 0
    first_sent: float | None = None
    answered_sent: float | None = None


@dataclass(frozen=True)
class PossibleDoubleCharge:
    """A charged request was retried after an attempt that may have been processed (and billed)."""

    endpoint: str
    credits: int
    attempt: int
    reason: str
    at: float
    """Wall-clock time (epoch seconds) of the retry decision."""


def within(
    endpoint: str, window: float, now: float, reached: float, possible_credits: int, lost: int
) -> None:
    """`OutcomeUnknown` when a replay would leave at `now`, more than the idempotency `window`
    after the first attempt that may have reached the service (at `reached`)."""
    age = now - reached
    if age > window:
        raise OutcomeUnknown(
            f"{endpoint}: no answer after the request may have reached the service, and a"
            f" replay now would leave {age:,.1f} s after it, past the idempotency window"
            f" ({window:g} s): a service that forgot the Idempotency-Key by then takes the"
            " replay for new work and bills it again. Not replayed.",
            endpoint=endpoint,
            possible_credits=possible_credits,
            first_sent=reached,
            lost=lost,
        )


def maybe_sent(error: TransientError) -> bool:
    if isinstance(error, ConnectionLost | ServerError):
        return error.maybe_sent
    return False
