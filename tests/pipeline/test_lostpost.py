"""Issue 44: what the usage says of a lost job POST, judged against the run's ledger."""

from __future__ import annotations

import pytest

from placeflow.pipeline.lostpost import Reading


def reading(unexplained: int, uncertain: int = 0) -> Reading:
    return Reading(unexplained, uncertain, in_flight=2, stamp=None, asked=0.0, answered=0.0)


@pytest.mark.parametrize(
    ("unexplained", "uncertain", "rows", "created"),
    [
        (0, 0, 250, False),  # nothing beyond the ledger: no job of it
        (-12, 0, 250, False),  # jobs ended and not loaded show less than their holds
        (250, 0, 250, True),  # its whole hold
        (240, 0, 250, True),  # a second job that ended, its unbilled rows released
        (3, 0, 250, None),  # a billing difference, not a job's hold
        (260, 20, 250, True),  # beyond what chunks held as uncertain may have cost
        (20, 20, 250, None),  # what a chunk held as uncertain may have cost
    ],
)
def test_a_job_is_seen_only_in_what_nothing_known_explains(
    unexplained: int, uncertain: int, rows: int, created: bool | None
) -> None:
    """A job of the lost POST shows as credits held beyond the ledger and beyond what chunks
    held as uncertain may cost, at least half its rows; nothing left over means no job."""
    assert reading(unexplained, uncertain).created_job(rows) is created
