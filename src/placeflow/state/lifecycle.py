"""The lifecycles where the money is, each one guarded table: every state a chunk (its row in
`jobs`), a research request (`research_requests`) or a run (`runs.status`) can be in, every move
between them, and who makes it. `move` makes a move of a `Machine` (`JOBS`, `REQUESTS`, `RUNS`)
and refuses one its table does not list (`IllegalMove`), in the same statement that makes it:
nothing is written. Adding a state is an entry in its STATES (and its moves in MOVES); the
warehouse's CHECK of the column is kept equal to it by tests/state/test_lifecycle.py.

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

The tables below are the truth; the drawings are their summary (tests/state/test_lifecycle.py
walks each table and proves a move it does not list is refused). A research request (deep
research has no Idempotency-Key, so its state is written ahead of its POST):

    planned ──sent──▶ sent ──received──▶ received ──answered──▶ answered (final)
    sent ──not_sent (refused: nothing charged) | not_billed (the usage did not move)──▶ planned
    sent ──lost (billed per the usage, no answer) | uncertain (may have been billed)
    lost | uncertain ──resend (--resend-uncertain)──▶ planned
    received ──unavailable (agent_unavailable: nothing billed)──▶ planned

A run (`runs.status`), recorded planned, running or refused:

    planned | running | interrupted | refused ──started──▶ running
    running ──closed (account)──▶ completed | failed | interrupted | left_to_other_run
                                  | double_charged | all_rejected
    planned | running | interrupted ──interrupted──▶ interrupted;  ──refused──▶ refused
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from placeflow.errors import IllegalMove

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

RESENDABLE: dict[str, str] = {
    UNKNOWN_JOB: "was unknown to the service",
    NO_RESULT_FILE: "showed no result file for its processed rows",
}
"""The holds `resend_held` takes back to planned (`--resend-uncertain` sends their places again,
which may pay for them twice), and what became of their jobs."""

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
        _move("lost_answers", {"planned"}, set(), "pipeline.submit",
              "attempts of its POST lost their answer: counted (lost_answers), nothing moves"),
        _move("not_sent", {"planned"}, set(), "pipeline.submit",
              "the POST was refused (402, 4xx): nothing reached the service, sending_at cleared"),
        _move("submitted", {"planned", "submitted"}, {"submitted"}, "pipeline.submit",
              "the job accepted (or replayed): batch_id stored, its hold recorded once"),
        _move("sending", {"planned", "submitted"}, {"submitted"}, "pipeline.submit",
              "a synchronous batch about to be sent (found so on resume: maybe charged)"),
        _move("answered", {"submitted"}, {"completed"}, "pipeline.submit",
              "a synchronous batch answered: its answers written as the chunk's file"),
        _move("uncertain", {"planned", "submitted"}, set(), "pipeline.submit, runner.carry",
              "held: its request may have been charged without an answer (UNCERTAIN)"),
        _move("unknown_job", {"submitted", "completed", "cancelled"}, set(), "pipeline.poll",
              "held: the service does not know the job (UNKNOWN_JOB)"),
        _move("stuck", {"submitted"}, {"timed_out"}, "pipeline.poll",
              "its progress stood still: cancelled, its processed rows to load (STUCK)"),
        _move("timed_out", {"submitted"}, {"timed_out"}, "pipeline.poll",
              "not finished within the poll timeout: cancelled (TIMED_OUT)"),
        _move("note_error", _LIVE, set(), "runner.carry, pipeline.poll",
              "an error noted on the chunk (it stays where it is, retried by resume)"),
        _move("ended", {"submitted", "timed_out", *_ENDED}, _ENDED, "pipeline.fetch",
              "the job ended with results: completed, or cancelled / failed part way"),
        _move("awaiting_file", {"submitted", "timed_out", *_ENDED}, _ENDED, "pipeline.fetch",
              "ended with rows processed and no result file: held (NO_RESULT_FILE)"),
        _move("ended_without_result", {"submitted", "timed_out", *_ENDED}, {"failed", "timed_out"},
              "pipeline.fetch", "ended before any row: the whole hold released"),
        _move("result_file", {*_ENDED, "timed_out"}, set(), "pipeline.fetch",
              "its result file downloaded and verified (path, sha256, size)"),
        _move("reopened", _ENDED, {"submitted"}, "runner.carry",
              "a synchronous batch whose file is gone from disk: to be sent again"),
        _move("resend_held", {"submitted", *_ENDED}, {"planned"}, "runner.carry",
              "a held job's places sent again as a new job (--resend-uncertain)",
              frozenset(RESENDABLE)),
        _move("settled", {*_ENDED, "timed_out", "loaded"}, {"loaded"}, "pipeline.load",
              "its file loaded with its charge and release, in the load's transaction"),
    )
}  # fmt: skip
"""Every move a chunk can make after `RunState.open` records it `planned` with the plan."""

# --- a research request (`research_requests.state`) --------------------------------------------

REQUEST_STATES: dict[str, str] = {
    "planned": "recorded with the plan, or put back: not sent, or known not billed",
    "sent": "written ahead of its POST: it may have reached the service",
    "received": "its raw answer stored, not yet loaded",
    "answered": "its answer loaded with its charge, in one transaction (final)",
    "lost": "billed per the key's usage delta, but no answer came back",
    "uncertain": "may have been billed (the usage cannot tell): not sent again unasked",
}
"""Every `research_requests.state`, and what it means."""

REQUEST_RESENDABLE = frozenset({"lost", "uncertain"})
"""The requests `--resend-uncertain` sends again (their places may be paid twice)."""

REQUEST_MOVES: dict[str, Move] = {
    m.name: m
    for m in (
        _move("sent", {"planned"}, {"sent"}, "pipeline.research.send",
              "written ahead, committed before its POST (attempts counted)"),
        _move("not_sent", {"sent"}, {"planned"}, "pipeline.research.send",
              "its POST was refused (402, 422, an error): nothing was charged"),
        _move("received", {"sent"}, {"received"}, "pipeline.research.send",
              "its raw answer stored (capped), to be loaded"),
        _move("unavailable", {"received"}, {"planned"}, "pipeline.research.send",
              "research was unavailable (agent_unavailable): nothing billed, tried again"),
        _move("answered", {"received"}, {"answered"}, "pipeline.research.load",
              "its answers and charge loaded in one transaction, the raw answer cleared"),
        _move("not_billed", {"sent"}, {"planned"}, "pipeline.research.send",
              "sent without an answer and the key's usage did not move: not billed"),
        _move("lost", {"sent"}, {"lost"}, "pipeline.research.send",
              "sent without an answer, billed per the key's usage delta (charged)"),
        _move("uncertain", {"sent"}, {"uncertain"}, "pipeline.research.send",
              "sent without an answer; the usage cannot tell (possible credits booked)"),
        _move("resend", REQUEST_RESENDABLE, {"planned"}, "pipeline.research.send",
              "put back in the plan by --resend-uncertain (a possible double charge)"),
    )
}  # fmt: skip
"""Every move a research request makes after it is recorded `planned` with the plan."""

# --- a run (`runs.status`) -----------------------------------------------------------------------

RUN_STATES: dict[str, str] = {
    "planned": "recorded with its plan, its budget not yet checked (a research run)",
    "running": "being carried out, or stopped by a crash while it was",
    "completed": "every place answered (exit 0)",
    "failed": "stopped by an error (exit 1)",
    "refused": "a budget or balance check said no: nothing sent (exit 3)",
    "interrupted": "stopped part way: the same command, or resume, goes on (exit 1)",
    "left_to_other_run": "places left to another run still have no answer (exit 4)",
    "double_charged": "the service billed work twice: booked in the ledger and named (exit 5)",
    "all_rejected": "every input row was rejected: nothing to send (exit 6)",
}
"""Every `runs.status`, and what it means (docs/cli.md's table of statuses and exit codes)."""

RUN_OPENS = frozenset({"planned", "running", "refused"})
"""The statuses a run is recorded with (`RunBook.record`)."""
RUN_ENDS = frozenset(
    {"completed", "failed", "interrupted", "left_to_other_run", "double_charged", "all_rejected"}
)
"""The statuses the account closes a run with (a resume accounts for an ended run again)."""
_RESUMABLE = frozenset({"planned", "running", "interrupted"})

RUN_MOVES: dict[str, Move] = {
    m.name: m
    for m in (
        _move("started", {*_RESUMABLE, "refused"}, {"running"}, "runner.research, state.runbook",
              "its budget checked and passed: sending (a refused research run checked again; a"
              " resumed run, taken over)"),
        _move("refused", {*_RESUMABLE, "refused"}, {"refused"}, "runner.research",
              "a budget, balance or field-policy check said no: nothing more sent"),
        _move("interrupted", _RESUMABLE | (RUN_ENDS - {"completed", "all_rejected"}),
              {"interrupted"}, "runner.carry, runner.research, state.marking",
              "stopped part way (chunks held, credits ran out, a full disk): resumable"),
        _move("closed", {"running"} | RUN_ENDS, RUN_ENDS, "pipeline.account",
              "the account's end: how the run ended, its counts, usage and message"),
    )
}  # fmt: skip
"""Every move of a run's status after it is recorded (`RUN_OPENS`)."""


# --- the guarded statement --------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """One guarded lifecycle: the table, its state column, the columns naming one row (`keys`),
    what a row is called in a refusal, its states and moves, and the column of its holds."""

    table: str
    column: str
    keys: tuple[str, ...]
    what: str
    states: Mapping[str, str]
    moves: Mapping[str, Move]
    held_column: str | None = None


JOBS = Machine("jobs", "status", ("run_id", "chunk_no"), "chunk", STATES, MOVES, "error_code")
REQUESTS = Machine(
    "research_requests", "state", ("run_id", "request_no"), "research request",
    REQUEST_STATES, REQUEST_MOVES,
)  # fmt: skip
RUNS = Machine("runs", "status", ("run_id",), "run", RUN_STATES, RUN_MOVES)
MACHINES = (JOBS, REQUESTS, RUNS)


def move(
    con: duckdb.DuckDBPyConnection,
    machine: Machine,
    name: str,
    key: Sequence[Any],
    to: str | None = None,
    **values: Any,
) -> None:
    """Make `machine`'s move `name` on the row `key` names: its state set to `to` (the move's one
    target when None) and `values` written, in one statement that holds only while the row is
    where the move may start (and, for a held-only move, so held); anywhere else nothing is
    written and `IllegalMove` says where the row is."""
    step = machine.moves[name]
    state = step.target(to)
    sets = {**values, **({machine.column: state} if state is not None else {})}
    names = ", ".join(f"{column} = ?" for column in sets)
    where = " and ".join(f"{k} = ?" for k in machine.keys)
    held = sorted(step.held)
    guard = f"list_contains(?, {machine.column})"
    args: list[Any] = [*sets.values(), *key, sorted(step.froms)]
    if machine.held_column is not None:
        guard += f" and (len(?) = 0 or list_contains(?, {machine.held_column}))"
        args += [held, held]
    found = con.execute(
        f"update {machine.table} set {names} where {where} and {guard}",  # noqa: S608 - our names
        args,
    ).fetchall()
    if found == [(1,)]:
        return
    shown = machine.column + (f", {machine.held_column}" if machine.held_column else "")
    rows = con.execute(
        f"select {shown} from {machine.table} where {where}",  # noqa: S608 - our names
        list(key),
    ).fetchall()
    if not rows:
        at = f"no such {machine.what}"
    elif machine.held_column is not None:
        at = f"it is {rows[0][0]} ({rows[0][1] or 'not held'})"
    else:
        at = f"it is {rows[0][0]}"
    ident = f"{key[-1]}" + (f" of {key[0]}" if len(key) > 1 else "")
    raise IllegalMove(
        f"{machine.what} {ident}: the lifecycle has no move {name} from where {at}; it moves"
        f" from {sorted(step.froms)}" + (f" held {held}" if held else "")
    )


def move_all(
    con: duckdb.DuckDBPyConnection,
    machine: Machine,
    name: str,
    rows: Sequence[Mapping[str, Any]],
    to: str | None = None,
    keep: Sequence[str] = (),
) -> None:
    """`move` on many rows in one statement: each of `rows` names its row by the machine's keys
    and gives its values (every row the same columns; a column of `keep` is written only where
    the row has none). Made on all of them, or on none when one is not where the move may start
    (`IllegalMove` then names it, the caller's transaction undoing the rest)."""
    if not rows:
        return
    step = machine.moves[name]
    state = step.target(to)
    columns = list(rows[0])
    values = [c for c in columns if c not in machine.keys]
    given = ", ".join(f"unnest(${c}) as {c}" for c in columns)
    names = [
        f"{c} = coalesce({machine.table}.{c}, given.{c})" if c in keep else f"{c} = given.{c}"
        for c in values
    ]
    if state is not None:
        names.append(f"{machine.column} = $state")
    join = " and ".join(f"{machine.table}.{k} = given.{k}" for k in machine.keys)
    guard = f"list_contains($froms, {machine.table}.{machine.column})"
    args: dict[str, Any] = {c: [r[c] for r in rows] for c in columns}
    args["froms"] = sorted(step.froms)
    if state is not None:
        args["state"] = state
    if machine.held_column is not None and step.held:
        guard += f" and list_contains($held, {machine.table}.{machine.held_column})"
        args["held"] = sorted(step.held)
    found = con.execute(
        f"update {machine.table} set {', '.join(names)} from (select {given}) as given"  # noqa: S608 - our names
        f" where {join} and {guard}",
        args,
    ).fetchall()
    if found == [(len(rows),)]:
        return
    for row in rows:  # the first row not where the move starts says why (IllegalMove)
        key = [row[k] for k in machine.keys]
        where = " and ".join(f"{k} = ?" for k in machine.keys)
        at = con.execute(
            f"select {machine.column} from {machine.table} where {where}",  # noqa: S608 - our names
            key,
        ).fetchall()
        if not at or at[0][0] not in step.froms:
            move(con, machine, name, key, to, **{c: row[c] for c in values})
    raise IllegalMove(f"{name}: {found} of {len(rows)} {machine.what}s could be moved")
