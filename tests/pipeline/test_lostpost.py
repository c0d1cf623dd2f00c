"""Issue 44: what the usage says of a lost job POST, judged against the run's ledger."""

from __future__ import annotations

import pytest

from placeflow.api.client import JobSubmission
from placeflow.api.models import JobSubmitResponse
from placeflow.api.retry import parse_timestamp
from placeflow.pipeline import lostpost
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


def judged_with(
    monkeypatch: pytest.MonkeyPatch, created: str, asked: Reading | None, after: Reading
) -> lostpost.Judged:
    """`lostpost.judge` of a 250-row job created at `created` (the service's stamp), answered
    0.05 s after its attempt left, the usage read after it being `after`."""
    monkeypatch.setattr(lostpost, "read_usage", lambda *_a, **_k: after)
    job = JobSubmitResponse(batch_id="b1", status="queued", created_at=created, total_items=250)
    submission = JobSubmission(job, "k", replayed=False, lost=1, first_sent=99.0,
                               answered_sent=100.0)  # fmt: skip
    return lostpost.judge(None, None, 0, submission, asked)  # type: ignore[arg-type]  # patched read_usage uses neither


def usage_at(stamp: str, unexplained: int) -> Reading:
    return Reading(
        unexplained, 0, in_flight=1, stamp=parse_timestamp(stamp), asked=100.04, answered=100.05,
        unit=lostpost.stamp_unit(stamp),
    )  # fmt: skip


def test_whole_second_stamps_never_make_new_work_look_original(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A service writing whole seconds: a job stamped 10 s read by a usage stamped 11 s, 0.05 s
    after its attempt left, may be new work made at 10.99; the stamps cannot tell, so the usage
    decides (it holds a second job: billed twice). Milliseconds still tell."""
    after = usage_at("2026-11-28T10:00:11Z", 250)
    got = judged_with(monkeypatch, "2026-11-28T10:00:10Z", None, after)
    assert (got.new, got.twice) == (True, True), got.why
    after = usage_at("2026-11-28T10:00:10.900Z", 250)
    got = judged_with(monkeypatch, "2026-11-28T10:00:10.000Z", None, after)
    assert (got.new, got.twice) == (False, False), got.why


def test_whole_second_stamps_never_make_the_original_look_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job stamped in the same whole second as the usage asked before the re-send may be the
    original, made before the usage was read (which then showed its hold): not taken as new
    work billed twice on the stamps; the usage after it shows nothing beyond the ledger."""
    asked = usage_at("2026-11-28T10:00:10Z", 250)
    got = judged_with(
        monkeypatch, "2026-11-28T10:00:10Z", asked, usage_at("2026-11-28T10:00:11Z", 0)
    )
    assert (got.new, got.twice) == (False, False), got.why


@pytest.mark.parametrize(
    ("stamp", "unit"),
    [("2026-11-28T10:00:10Z", 1.0), ("2026-11-28T10:00:10.5+00:00", 0.1),
     ("2026-11-28T10:00:10.123456+00:00", 0.001), ("2026-11-28T10:00Z", 60.0), (None, 1.0)],
)  # fmt: skip
def test_a_stamp_is_as_precise_as_it_is_written(stamp: str | None, unit: float) -> None:
    """A service timestamp stands for a moment within its last digit's unit."""
    assert lostpost.stamp_unit(stamp) == pytest.approx(unit)
