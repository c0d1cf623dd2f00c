"""The job lifecycle, where the money is: every state a chunk (its row in `jobs`) can be in, every
move between them, and who makes it. `RunState` makes each move through `MOVES` and refuses one
the table does not list (`IllegalMove`), in the same statement that makes it.

A chunk's state is its `jobs.status`; a chunk may also be *held* by its `jobs.error_code`
(`HOLDS`): its places may have been paid for without an answer, so they are neither settled nor
sent again until the service shows the answer or the user accepts a possible double charge
(`--resend-uncertain`). `sending_at` marks a job's POST written ahead: set, with no batch_id,
the request may have reached the service.

    planned ──sending_job──▶ planned (sending_at) ──submitted──▶ submitted ──┐
       │  ╰──not_sent (refused: nothing reached the service)                  │
       │  ╰──uncertain (lost answer, past the idempotency window: held)       │
       ╰──sending (sync) ──▶ submitted ──answered──▶ completed               │
                                                                              ▼
    submitted ──stuck / timed_out──▶ timed_out     submitted ──unknown_job (held)
    submitted | timed_out ──ended──▶ completed | cancelled ──result_file──▶ (file verified)
                          ──awaiting_file──▶ completed | cancelled (held: NO_RESULT_FILE)
                          ──ended_without_result──▶ failed | timed_out (hold released: final)
    completed | cancelled | timed_out ──settled (load, one transaction)──▶ loaded (final)
    held (UNKNOWN_JOB, NO_RESULT_FILE) ──resend_held──▶ planned (a new Idempotency-Key)

The table below is the truth; the drawing is its summary (tests/state/test_lifecycle.py walks
the table and proves a move it does not list is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from placeflow.errors import IllegalMove

ChunkStatus = Literal[
    "planned", "submitted", "completed", "cancelled", "timed_out", "failed", "loaded"
]  # fmt: skip

STATES: dict[str, str] = {
    "planned": "recorded with the plan; not sent, or its POST written ahead (sending_at)",
    "submitted": "a job accepted (batch_id, hold), or a synchronous batch going out",
    "completed": "the job (or batch) ended with every row answered; its file to load",
    "cancelled": "the job ended with some rows answered (cancelled, or failed part way)",
    "timed_out": "placeflow gave up on the job and cancelled it; what it processed to load",
    "failed": "ended with nothing processed: nothing charged, the hold released (final)",
    "loaded": "its verified file loaded, its charge and release in the ledger (final)",
}
"""Every `jobs.status`, and what it means."""

FINAL = frozenset({"failed", "loaded"})
"""States no move leaves but a repeated load of a loaded chunk (its charge replaced)."""

UNCERTAIN = "UNCERTAIN"
UNKNOWN_JOB = "UNKNOWN_JOB"
NO_RESULT_FILE = "NO_RESULT_FILE"
HOLDS: dict[str, str] = {
    UNCERTAIN: "its request may have been charged without an answer (a lost POST past the"
    " idempotency window, or a synchronous batch's lost answer): not sent again blind",
    UNKNOWN_JOB: "the service answered it does not know the job: looked for again by resume",
    NO_RESULT_FILE: "the job ended with rows processed and shows no result file: looked for"
    " again by resume",
}
"""`jobs.error_code` values that hold a chunk (resume settles it; --resend-uncertain sends the
places of UNKNOWN_JOB and NO_RESULT_FILE again as a new job, UNCERTAIN ones as they were)."""

ENDINGS: dict[str, str] = {
    "STUCK": "its progress stood still for --stuck-after seconds: cancelled by placeflow",
    "TIMED_OUT": "not finished within --poll-timeout: cancelled by placeflow",
    "NO_RESULT": "ended without a result file and without rows processed",
    "FAILED": "failed part way (the service gave no error_code): its processed rows loaded",
}
"""`jobs.error_code` values a chunk ends with (the service's own error_code otherwise)."""

RESENDABLE = frozenset({UNKNOWN_JOB, NO_RESULT_FILE})
"""The holds `resend_held` takes back to planned."""

_LIVE = frozenset({"planned", "submitted", "completed", "cancelled", "timed_out"})
_ENDED = frozenset({"completed", "cancelled"})


@dataclass(frozen=True)
class Move:
    """One allowed move: from any of `froms` to one of `to` (empty: the status stays and other
    columns of the row change), made by `who`; `held` limits it to chunks held so."""

    name: str
    froms: frozenset[str]
    to: frozenset[str]
    who: str
    what: str
    held: frozenset[str] = frozenset()

    def target(self, to: str | None) -> str | None:
        """The status the move leaves (None: unchanged); refuses one the move does not list."""
        if to is None and len(self.to) == 1:
            return next(iter(self.to))
        if (to is None and self.to) or (to is not None and to not in self.to):
            raise IllegalMove(f"{self.name} moves a chunk to {sorted(self.to)}, not to {to}")
        return to


def _move(
    name: str,
    froms: frozenset[str] | set[str],
    to: frozenset[str] | set[str],
    who: str,
    what: str,
    held: frozenset[str] = frozenset(),
) -> Move:
    return Move(name, frozenset(froms), frozenset(to), who, what, held)


MOVES: dict[str, Move] = {
    m.name: m
    for m in (
        _move("sending_job", {"planned"}, set(), "pipeline.submit",
              "a job's POST written ahead (sending_at)"),
        _move("not_sent", {"planned"}, set(), "pipeline.submit",
              "the POST was refused (402, 4xx): nothing reached the service, sending_at cleared"),
        _move("submitted", {"planned", "submitted"}, {"submitted"}, "pipeline.submit",
              "the job accepted (or replayed): batch_id stored, its hold recorded once"),
        _move("sending", {"planned", "submitted"}, {"submitted"}, "pipeline.submit",
              "a synchronous batch about to be sent (found so on resume: maybe charged)"),
        _move("answered", {"submitted"}, {"completed"}, "pipeline.submit",
              "a synchronous batch answered: its answers written as the chunk's file"),
        _move("uncertain", {"planned", "submitted"}, set(), "pipeline.submit, orchestrate",
              "held: its request may have been charged without an answer (UNCERTAIN)"),
        _move("unknown_job", {"submitted", "completed", "cancelled"}, set(), "pipeline.poll",
              "held: the service does not know the job (UNKNOWN_JOB)"),
        _move("stuck", {"submitted"}, {"timed_out"}, "pipeline.poll",
              "its progress stood still: cancelled, its processed rows to load (STUCK)"),
        _move("timed_out", {"submitted"}, {"timed_out"}, "pipeline.poll",
              "not finished within the poll timeout: cancelled (TIMED_OUT)"),
        _move("note_error", _LIVE, set(), "orchestrate, pipeline.poll",
              "an error noted on the chunk (it stays where it is, retried by resume)"),
        _move("ended", {"submitted", "timed_out", *_ENDED}, _ENDED, "pipeline.fetch",
              "the job ended with results: completed, or cancelled / failed part way"),
        _move("awaiting_file", {"submitted", "timed_out", *_ENDED}, _ENDED, "pipeline.fetch",
              "ended with rows processed and no result file: held (NO_RESULT_FILE)"),
        _move("ended_without_result", {"submitted", "timed_out", *_ENDED}, {"failed", "timed_out"},
              "pipeline.fetch", "ended before any row: the whole hold released"),
        _move("result_file", {*_ENDED, "timed_out"}, set(), "pipeline.fetch",
              "its result file downloaded and verified (path, sha256, size)"),
        _move("reopened", _ENDED, {"submitted"}, "orchestrate",
              "a synchronous batch whose file is gone from disk: to be sent again"),
        _move("resend_held", {"submitted", *_ENDED}, {"planned"}, "orchestrate",
              "a held job's places sent again as a new job (--resend-uncertain)", RESENDABLE),
        _move("settled", {*_ENDED, "timed_out", "loaded"}, {"loaded"}, "pipeline.load",
              "its file loaded with its charge and release, in the load's transaction"),
    )
}  # fmt: skip
"""Every move a chunk can make after `RunState.open` records it `planned` with the plan."""
