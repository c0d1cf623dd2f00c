"""The one rule of a request without an Idempotency-Key whose answer was lost (a run's
synchronous batch, a research request): what the usage says it was billed."""

from __future__ import annotations

import pytest

from placeflow.pipeline.lostpost import Reading
from placeflow.pipeline.writeahead import billed_by


def reading(unexplained: int, in_flight: int = 0) -> Reading:
    return Reading(unexplained, 0, in_flight=in_flight, stamp=None, asked=0.0, answered=0.0)


@pytest.mark.parametrize(
    ("read", "most", "billed"),
    [
        (reading(0), 40, 0),  # nothing beyond the ledger: not billed, sent again
        (reading(40), 40, 40),  # its whole cost: billed, its answer lost
        (reading(12), 40, 12),  # part of it (rows capped or abstained): billed so
        (reading(41), 40, None),  # more than it could cost: someone else spent too
        (reading(-3), 40, None),  # less than the ledger: a possible charge never billed
        (reading(0, in_flight=1), 40, None),  # a job of the run in flight moves it
        (None, 40, None),  # no figure, or another run's spend the ledger cannot explain
    ],
)
def test_a_lost_answer_is_billed_only_by_what_nothing_known_explains(
    read: Reading | None, most: int, billed: int | None
) -> None:
    """Not billed when the usage holds nothing beyond the ledger; billed what it holds when that
    is within what the request could cost; otherwise the usage cannot tell."""
    assert billed_by(read, most) == billed
