"""Balance a settled run's ledger to the credit the service itself booked.

The ledger charges by the spec's rule as each chunk loads; the service's `current_usage` delta
over the run is what the user pays. Once nothing of the run is left open, any difference is
recorded as one signed `adjustment` entry (`RunBook.adjusted`) with its reason, unless the
key was plainly used by someone else: another run on the same key overlapped this one in the
warehouse or in the key's spend journal (any process of this machine, research too), or the
usage moved by more than the run could explain. Those are said, not adjusted.

An adjustment that equals, with its sign, the rows the run charged only for an all-null status
object teaches that the service does not bill that shape: the reading is kept per target
(`billing_readings`) and the load's billing rule follows it from then on.
"""

from __future__ import annotations

from collections.abc import Mapping

from placeflow.api.journal import SpendJournal
from placeflow.state.runbook import RunBook
from placeflow.store.warehouse import sql_text

NULL_STATUS = "null_status"
"""A success whose status object is present with only nulls, and no other value."""


def concurrent_runs(state: RunBook, journal: SpendJournal | None = None) -> list[str]:
    """Other runs on the same key and service whose time overlapped this run's: in this
    warehouse, and (with the key's `journal`) in any process of this machine, research
    included, whose spend was in flight since this run opened."""
    rows = state.con.execute(
        sql_text("queries/concurrent_runs"), {"run_id": state.run_id, "now": state.now()}
    ).fetchall()
    found = {str(r[0]) for r in rows}
    if journal is not None:
        opened = state.con.execute(
            "select created_at from runs where run_id = ?", [state.run_id]
        ).fetchall()
        if opened:
            found.update(journal.others(state.run_id, since=opened[0][0].timestamp()))
    return sorted(found)


def null_status_rows(state: RunBook) -> int:
    row = state.con.execute(sql_text("queries/null_status_rows"), {"run_id": state.run_id})
    found = row.fetchone()
    return int(found[0]) if found else 0


def failed_rows_unbilled(state: RunBook) -> int:
    """The run's loaded rows that failed and that its ledger charged nothing for."""
    row = state.con.execute(sql_text("queries/failed_rows_unbilled"), {"run_id": state.run_id})
    found = row.fetchone()
    return int(found[0]) if found else 0


def _target(state: RunBook) -> str:
    row = state.con.execute("select target from runs where run_id = ?", [state.run_id])
    found = row.fetchone()
    return str(found[0]) if found else ""


def twice(state: RunBook, *, maybe: bool = False) -> dict[int, int]:
    """The chunks the service billed twice (a second job of their places: `billed_twice`), or
    with `maybe` those that may have been (`_book_lost`), by chunk number: the credits their
    other jobs may cost."""
    rows = state.con.execute(
        "select chunk_no, sum(credits) from credit_ledger where run_id = ? and kind = 'possible'"
        " and ref like ? and chunk_no is not null group by chunk_no order by chunk_no",
        [state.run_id, "%:maybe-twice" if maybe else "%:twice"],
    ).fetchall()
    return {int(n): int(c) for n, c in rows}


def _charged(state: RunBook, chunks: Mapping[int, int]) -> int:
    """What the ledger charged `chunks` (their answered jobs)."""
    if not chunks:
        return 0
    marks = ", ".join("?" for _ in chunks)
    found = state.con.execute(
        "select coalesce(sum(credits), 0) from credit_ledger where run_id = ? and kind ="  # noqa: S608 - marks
        f" 'charge' and chunk_no in ({marks})",
        [state.run_id, *chunks],
    ).fetchone()
    return int(found[0]) if found else 0


def _rows(state: RunBook, chunks: Mapping[int, int]) -> int:
    """The places of `chunks`: what one job of each may cost at most."""
    if not chunks:
        return 0
    marks = ", ".join("?" for _ in chunks)
    found = state.con.execute(
        f"select coalesce(sum(rows), 0) from jobs where run_id = ? and chunk_no in ({marks})",  # noqa: S608 - marks
        [state.run_id, *chunks],
    ).fetchone()
    return int(found[0]) if found else 0


def suspects(state: RunBook) -> dict[int, int]:
    """Job chunks whose POST lost answers and was answered, not known to be billed twice: a
    usage beyond the ledger once the run settled is what such a chunk's other jobs cost, at
    most its rows for each attempt whose answer was lost (each may have made a job)."""
    known = {**twice(state), **twice(state, maybe=True)}
    rows = state.con.execute(
        "select chunk_no, rows * lost_answers from jobs where run_id = ?"
        " and coalesce(lost_answers, 0) > 0 and batch_id is not null order by chunk_no",
        [state.run_id],
    ).fetchall()
    return {int(n): int(r) for n, r in rows if int(n) not in known}


def twice_line(state: RunBook) -> str | None:
    """One line saying what the service billed twice, or None."""
    found, maybe = twice(state), twice(state, maybe=True)
    if not found:
        return None
    booked = state.con.execute(
        "select coalesce(sum(credits), 0) from credit_ledger where run_id = ?"
        " and kind = 'adjustment'",
        [state.run_id],
    ).fetchone()
    among = (
        f"; chunk(s) {_names(maybe)} ({_rows(state, maybe):,} places), whose answers were lost,"
        " may have been too"
        if maybe
        else ""
    )
    return (
        f"billed twice: chunk(s) {_names(found)} ({_rows(state, found):,} places): the service"
        " created a second job of them when a re-send of a POST whose answer was lost came"
        f" after it had forgotten the Idempotency-Key{among}; the ledger books what the usage"
        f" shows (adjustments {int(booked[0]) if booked else 0:+,})"
    )


def _names(chunks: Mapping[int, int]) -> str:
    return ", ".join(str(n) for n in sorted(chunks))


def balance(
    state: RunBook,
    delta: int,
    totals: Mapping[str, int],
    *,
    submitted: int,
    extra: int,
    journal: SpendJournal | None = None,
    lost: Mapping[int, int] | None = None,
    why: str | None = None,
) -> str | None:
    """Adjust the ledger to the usage `delta` when the key was ours alone; a message, or None
    when the ledger already balances. `lost` are the chunks held because their answers were
    lost (chunk number: rows), the only ones left open: what the usage shows beyond the
    ledger, up to their rows, is what they cost, booked as an adjustment that names them; so
    is what jobs created twice cost (`twice`), and, beyond both, what a chunk whose answers
    were lost (`suspects`) cost twice: it is then booked as billed twice. A difference of
    exactly the run's failed rows (`failed_rows_unbilled`) is the service billing them, as a
    job's hold never is: booked as a billing difference, not as billed twice.
    `why`: the caller's reason for a difference, when it knows one (else the spec's rule)."""
    charged = totals.get("charge", 0)
    diff = delta - charged - totals.get("adjustment", 0)
    if diff == 0:
        return None
    said = f"usage moved {delta:,}, the ledger charged {charged:,} (difference {diff:+,})"
    others = concurrent_runs(state, journal)
    if others:
        return f"{said}; not adjusted: run(s) {', '.join(others)} used the same key meanwhile"
    doubled, suspected = {**twice(state), **twice(state, maybe=True)}, suspects(state)
    if diff > submitted - charged + extra + sum(suspected.values()) or diff < -charged:
        return f"{said}; not adjusted: more than this run could explain (another user of the key?)"
    failed = failed_rows_unbilled(state) if diff > 0 and not (lost or doubled) else 0
    if failed and failed == diff:  # the rows that failed, to the credit: no job's hold
        why = f"the service billed the {failed:,} row(s) that failed, which the spec calls free"
        state.adjusted(diff, f"{said}: {why}")
        return f"ledger adjusted by {diff:+,} to the service's usage: {why}"
    if diff > 0 and (lost or doubled or suspected):
        return _book_lost(state, diff, said, dict(lost or {}), doubled, suspected)
    why = why or "the service billed differently from the spec's rule"
    nulls = null_status_rows(state) if diff < 0 else 0
    if nulls and nulls == -diff:
        why = f"the service did not bill {nulls:,} row(s) whose status held only nulls"
        state.learnt(_target(state), NULL_STATUS, billed=False)
    state.adjusted(diff, f"{said}: {why}")
    return f"ledger adjusted by {diff:+,} to the service's usage: {why}"


def _book_lost(
    state: RunBook,
    diff: int,
    said: str,
    lost: dict[int, int],
    doubled: dict[int, int],
    suspected: dict[int, int],
) -> str:
    """The usage beyond the ledger once only chunks whose answers were lost are open: what
    they cost (the service billed them, the answers never came) and what second jobs cost,
    booked as one adjustment naming them, when it is no more than their rows; beyond that, a
    chunk whose answers were lost (`suspected`) was billed twice, and is booked so; beyond one
    job of each chunk billed twice (what its answered job cost), such chunks may have been,
    and are named so. A later
    balance corrects it (a job still running shows its whole hold until it ends)."""
    most = sum(lost.values()) + sum(doubled.values())
    maybe: dict[int, int] = {}
    if diff > most and suspected:
        for n, most_cost in suspected.items():
            state.billed_twice(n, ref=f"chunk-{n}:twice", credits=most_cost, why=(
                f"chunk {n}: its POST lost answers and the usage shows, once the run settled,"
                " more than the ledger explains: another job of its places was billed (at most"
                f" {most_cost:,} credits: its rows for each attempt whose answer was lost)"
            ))  # fmt: skip
        doubled = {**doubled, **suspected}
        most += sum(suspected.values())
    elif suspected and doubled and diff > sum(lost.values()) + _charged(state, doubled):
        # More than one more job of each chunk billed twice costs (as much as its answered job
        # did: the same places): their further attempts, or chunks whose answers were lost,
        # which the usage alone cannot tell apart; named as may have been.
        for n, most_cost in suspected.items():
            state.billed_twice(n, ref=f"chunk-{n}:maybe-twice", credits=most_cost, why=(
                f"chunk {n}: its POST lost answers, and the usage shows, once the run settled,"
                " more than one more job of each chunk known billed twice costs: another job of"
                f" its places may have been billed (at most {most_cost:,} credits)"
            ))  # fmt: skip
        maybe = suspected
    every = {**lost, **doubled}
    if diff > most:
        return (
            f"{said}; not adjusted: more than chunk(s) {_names(every)}, whose answers were lost"
            " or which were billed twice, cost"
        )
    parts = []
    if lost:
        parts.append(f"chunk(s) {_names(lost)}: their answers were lost after the service billed")
    if doubled:
        parts.append(f"chunk(s) {_names(doubled)}: billed twice (a second job of their places)")
    if maybe:
        parts.append(f"chunk(s) {_names(maybe)}: their answers were lost, may have been too")
    why = f"{'; '.join(parts)}: {diff:+,} credit(s) for them (at most {most:,})" + (
        "; their places are not answered" if lost else ""
    )
    state.adjusted(diff, f"{said}: {why}")
    return f"ledger adjusted by {diff:+,} to the service's usage: {why}"
