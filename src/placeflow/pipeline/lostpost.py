"""A job POST whose answer was lost: did it create a job, and is the job that answered a replay
of the original or new work billed twice (issue 44)?

The spec promises the original job to a prompt retry under the same Idempotency-Key and body
while the service keeps the key, and does not show how long that is; for bulk jobs it names no
header saying a replay is one. So placeflow judges by what the service shows:

- **the usage's holds** (`read_usage`): `current_usage` less the usage before the run and less
  what the run's ledger explains (each chunk's hold, or its charge once loaded, and the jobs
  known to be billed twice). A job of the run in flight is explained by its hold; one that
  ended and is not loaded yet shows less than its hold (its unbilled rows). So what is left
  over and positive is held by a job the ledger does not know: the lost POST's. The key's
  spend journal says whether another run could have moved the usage meanwhile: a settled run
  of this warehouse opened after this one is explained by its own ledger (`others_explained`),
  any other means it cannot tell; the rows of chunks held as uncertain are what they may have
  cost, and failed rows, free by the spec, what a service billing them all the same billed.
- **the job's `created_at`** against the first attempt: a job created before the usage was
  asked (the usage's `validation_timestamp`, the service's clock against the service's clock)
  existed before the re-send, so it is the original; one created after it is the re-send's.
  Without such a reading, a job older (on the service's clock) than the time since the
  answering attempt left (on this machine's) was created by an earlier attempt.
- the `Idempotent-Replayed` header, where a service sends one, is a hint used only when the
  rest cannot tell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placeflow.api.client import JobSubmission, PlaceApiClient
from placeflow.api.errors import UsageUnknown
from placeflow.api.retry import parse_timestamp
from placeflow.pipeline.reconcile import concurrent_runs, failed_rows_unbilled
from placeflow.state.runbook import RunBook
from placeflow.store.warehouse import sql_text

STAMP_SLACK = 0.002
"""Seconds two readings of this machine's clock may differ by beyond what they measure."""

_SECONDS = re.compile(r"T\d{2}:\d{2}(?::\d{2}(?:[.,](\d+))?)?")


def stamp_unit(text: str | None) -> float:
    """How far a service timestamp may be from the moment it stands for, by how it is written:
    its last digit's unit (1 s for whole seconds, 0.001 s for milliseconds or finer; 60 s
    without seconds). Services cut or round: the moment lies within one unit either way. The spec
    shows no precision; one service writes whole seconds (docs/spec-readings.md)."""
    found = _SECONDS.search(text or "")
    if found is None:
        return 1.0
    if found.group(0).count(":") < 2:
        return 60.0
    digits = found.group(1)
    return max(0.001, 10.0 ** -len(digits)) if digits else 1.0


def _explained(state: RunBook, run_id: str) -> int | None:
    """What `run_id`'s ledger explains of the key's usage, when all of it is settled: none of
    its jobs in flight, no POST or synchronous batch whose answer was lost (None otherwise)."""
    found = state.con.execute(
        sql_text("queries/run_usage_explained"), {"run_id": run_id, "chunk_no": -1}
    )
    row = found.fetchone()
    assert row is not None
    lost = state.con.execute(
        "select count(*) from jobs where run_id = ? and ((status = 'planned' and sending_at is"
        " not null) or (status = 'submitted' and batch_id is null))",
        [run_id],
    ).fetchone()
    return None if int(row[1]) or (lost and int(lost[0])) else int(row[0])


def others_explained(state: RunBook, others: list[str]) -> int | None:
    """What the runs beside this one (`concurrent_runs`) spent since this run read the usage:
    each must be of this warehouse, opened after this run (its whole spend is after this
    run's reading) and settled (`_explained`); None when one is not (the usage cannot tell)."""
    if not others:
        return 0
    marks = ", ".join("?" for _ in others)
    rows = state.con.execute(
        f"select run_id from runs where run_id in ({marks}) and usage_before is not null"  # noqa: S608 - marks
        " and created_at > (select created_at from runs where run_id = ?)",
        [*others, state.run_id],
    ).fetchall()
    if len(rows) != len(set(others)):
        return None
    total = 0
    for (run_id,) in rows:
        spent = _explained(state, str(run_id))
        if spent is None:
            return None
        total += spent
    return total


@dataclass(frozen=True)
class Reading:
    """The key's usage judged against the run's ledger at one moment (see the module)."""

    unexplained: int
    """current_usage - usage_before - what the ledger explains."""
    uncertain: int
    """Rows of other chunks held as uncertain (the most their lost answers may have cost), and
    the run's failed rows the ledger charged nothing for (a service may bill them all the same:
    the spec's "failed rows free" read otherwise): what the usage may show beyond the ledger
    without any job of a lost POST."""
    in_flight: int
    """Chunks of the run whose job was sent and not yet loaded."""
    stamp: float | None
    """The usage's validation_timestamp (the service's clock, epoch seconds), when it has one."""
    asked: float
    answered: float
    """The client's clock when the question left and when its answer came."""
    unit: float = 0.001
    """How far `stamp` may be from the moment it stands for (`stamp_unit`)."""

    def created_job(self, rows: int | None = None) -> bool | None:
        """Whether a job the ledger does not know holds credits: True when more is held than
        anything known explains (and, for a job of `rows` places, at least half of them: less
        is a billing difference, not a job's hold), False when nothing is left over, None when
        it cannot tell (what is left over may be what chunks held as uncertain cost)."""
        if self.unexplained <= 0:
            return False
        beyond = self.unexplained - self.uncertain
        if beyond > 0 and (rows is None or 2 * beyond >= rows):
            return True
        return None


def usage_expected(state: RunBook) -> int | None:
    """The key's usage the run accounts for now: its usage before plus what its ledger explains
    (what `read_usage` weighs the usage against; None when the run has no usage before)."""
    row = state.con.execute(
        "select usage_before from runs where run_id = ?", [state.run_id]
    ).fetchone()
    if row is None or row[0] is None:
        return None
    found = state.con.execute(
        sql_text("queries/run_usage_explained"), {"run_id": state.run_id, "chunk_no": -1}
    ).fetchone()
    return int(row[0]) + (int(found[0]) if found else 0)


def read_usage(
    api: PlaceApiClient,
    state: RunBook,
    *,
    chunk_no: int = -1,
    urgent: bool = False,
    strict: bool = False,
) -> Reading | None:
    """The usage against the run's ledger now (chunk `chunk_no`, the one judged, not counted
    as uncertain) and what the runs beside it spent (`others_explained`); None when it cannot
    be had (`strict`: `UsageUnknown` raised instead) or another user of the key cannot be
    explained."""
    row = state.con.execute(
        "select usage_before from runs where run_id = ?", [state.run_id]
    ).fetchone()
    if row is None or row[0] is None:
        return None
    besides = others_explained(state, concurrent_runs(state, api.journal))
    if besides is None:
        return None
    found = state.con.execute(
        sql_text("queries/run_usage_explained"), {"run_id": state.run_id, "chunk_no": chunk_no}
    ).fetchone()
    assert found is not None
    explained, in_flight, uncertain = (int(v) for v in found)
    failed = failed_rows_unbilled(state)
    asked = api.clock()
    try:
        usage = api.usage(urgent=urgent)
    except UsageUnknown:
        if strict:
            raise
        return None
    return Reading(
        unexplained=usage.current_usage - int(row[0]) - explained - besides,
        uncertain=uncertain + failed,
        in_flight=in_flight,
        stamp=parse_timestamp(usage.validation_timestamp),
        unit=stamp_unit(usage.validation_timestamp),
        asked=asked,
        answered=api.clock(),
    )


@dataclass(frozen=True)
class Judged:
    """Whether the job that answered a POST with lost answers is new work: True (the service
    created it for a re-send), False (the original, replayed), None (cannot tell); `twice`,
    whether that new work is a known double charge (an earlier attempt may have created a job
    of the same places); `why`, the evidence in words."""

    new: bool | None
    twice: bool
    why: str


def judge(
    api: PlaceApiClient,
    state: RunBook,
    chunk_no: int,
    submission: JobSubmission,
    asked: Reading | None,
) -> Judged:
    """Original or new work, for a job that answered after lost answers (see the module).
    `asked`: the usage read before the last re-send, when one was."""
    created = parse_timestamp(submission.job.created_at)
    unit = stamp_unit(submission.job.created_at)
    if asked is not None and asked.stamp is not None and created is not None:
        # Only what the stamps' precision proves: whole seconds seldom tell (the usage does)
        if created + unit < asked.stamp - asked.unit:
            return Judged(False, False, "created before the usage was asked: the original job")
        before = asked.created_job(submission.job.total_items)
        if before is not None and created - unit > asked.stamp + asked.unit:
            said = "showed a job of it held" if before else "showed no job of it"
            return Judged(
                True, before, f"created after the usage was asked, which {said} before the re-send"
            )
    after = read_usage(api, state, chunk_no=chunk_no, urgent=True)
    if after is not None and after.stamp is not None and created is not None:
        since = after.answered - (submission.answered_sent or after.answered)
        if (after.stamp - after.unit) - (created + unit) > since + STAMP_SLACK:
            return Judged(False, False, "created before the attempt that got it left")
    shown = after.created_job(submission.job.total_items) if after is not None else None
    if shown is True:
        held = after.unexplained if after is not None else 0
        return Judged(
            True, True, f"the usage holds {held:,} credit(s) no job of the run's ledger explains"
        )
    if shown is False:
        return Judged(False, False, "the usage holds nothing beyond the run's ledger")
    if submission.replayed:
        return Judged(False, False, "the service marked it Idempotent-Replayed")
    return Judged(None, False, "neither the usage nor the job's creation time can tell")
