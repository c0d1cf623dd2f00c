"""A request the service answers at once and without an Idempotency-Key, sent so that it is
never paid for twice unasked: a run's synchronous batch (`placeflow.pipeline.submit.send_batch`)
and a research request (`placeflow.pipeline.research.send`) are two kinds (`Kind`) of it, and
this is their one rule.

    budget left ──▶ written ahead (committed) ──▶ the request ──▶ its answer stored (the kind's)
                                                       ╰── lost ──▶ judged by the usage:
        not billed (the usage holds nothing the run's ledger does not explain) ──▶ sent again
        billed (more, within what the request can cost) ──▶ the kind books it
        cannot tell (a shared key, another run's spend, a job in flight) ──▶ held uncertain

Nothing is sent past the budget the kind has left. A request found written ahead without its
answer (its invocation stopped mid-request) is judged the same way (`judge`) before it is sent
again. The usage is read against the run's ledger, with another run's spend on the key
explained or making it "cannot tell" (`placeflow.pipeline.lostpost.read_usage`); a usage that
cannot be read is the kind's to handle (kept to settle later, or held). `--resend-uncertain` is
the kind's: its lifecycle takes a held request back to be sent. While a run sends, the key's
spend journal has it active (`journaled`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, Protocol, TypeVar

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import OutcomeUnknown, PlaceflowError, UsageUnknown
from placeflow.errors import stop
from placeflow.pipeline.lostpost import Reading, read_usage
from placeflow.state.runbook import RunBook

A = TypeVar("A")
Outcome = Literal["answered", "not_billed", "billed", "uncertain"]
"""What became of a request: answered (its answer stored), or lost and judged by the usage."""


class Kind(Protocol[A]):
    """What one kind of request supplies: its number (its ledger entries' chunk_no), the most it
    can cost, its name in messages, and its writes at each moment."""

    @property
    def no(self) -> int: ...
    @property
    def most(self) -> int: ...
    @property
    def name(self) -> str: ...

    def left(self) -> int | None:
        """The credits its budget has left before it (None: no cap here)."""
        ...

    def sending(self, left: int | None) -> None:
        """Written ahead and committed: from here a lost answer is judged, never resent blind."""
        ...

    def call(self) -> A:
        """The request; `OutcomeUnknown` when its answer was lost."""
        ...

    def received(self, answer: A) -> None:
        """Its answer stored (committed)."""
        ...

    def refused(self, error: PlaceflowError) -> None:
        """It was refused or failed with an answer (nothing charged); raise to stop."""
        ...

    def not_billed(self) -> None: ...
    def billed(self, credits: int) -> None: ...
    def uncertain(self, why: str) -> None: ...

    def usage_unknown(self, error: UsageUnknown) -> None:
        """The usage could not be read to judge it: raise to keep it written ahead (settled by a
        later invocation), or return to hold it uncertain."""
        ...


def billed_by(reading: Reading | None, most: int) -> int | None:
    """What a request sent without an answer was billed, by the usage: 0 (not billed), the
    credits (billed, within the `most` it can cost), None (cannot tell: no reading, a job of the
    run in flight, or more or less than it could have cost)."""
    if reading is None or reading.in_flight:
        return None
    if reading.unexplained == 0:
        return 0
    return reading.unexplained if 0 < reading.unexplained <= most else None


def judge(api: PlaceApiClient, book: RunBook, kind: Kind[A], *, shared: bool = False) -> Outcome:
    """Judge a request sent without an answer by the key's usage, and make the kind's move
    (see the module); `shared`: the user said the key is not the run's alone (cannot tell)."""
    reading: Reading | None = None
    if not shared:
        try:
            reading = read_usage(api, book, chunk_no=kind.no, strict=True)
        except UsageUnknown as error:
            kind.usage_unknown(error)
    credits = billed_by(reading, kind.most)
    if credits == 0:
        kind.not_billed()
        return "not_billed"
    if credits is not None:
        kind.billed(credits)
        return "billed"
    kind.uncertain(_why(reading, shared))
    return "uncertain"


def _why(reading: Reading | None, shared: bool) -> str:
    """Why the usage cannot tell whether a lost answer's request was billed."""
    if shared:
        return "the key is shared (--shared-key)"
    if reading is None:
        return "another user of the key, or no usage figure"
    if reading.in_flight:
        return "a job of the run is in flight"
    return f"the usage holds {reading.unexplained:,} credit(s) the run's ledger does not explain"


def send(
    api: PlaceApiClient, book: RunBook, kind: Kind[A], *, tries: int = 1, shared: bool = False
) -> Outcome:
    """Send the kind's request written ahead, within its budget; a lost answer judged by the
    usage (`judge`), and the request sent again while the usage shows it was not billed, up to
    `tries` times in all."""
    left = kind.left()
    if left is not None and kind.most > left:
        raise stop(
            "budget",
            f"the budget has {max(left, 0):,} credit(s) left and {kind.name} can cost"
            f" {kind.most:,}: stopped before it; rerun with a higher --max-credits to go on",
        )
    verdict: Outcome = "not_billed"
    for _ in range(tries):
        kind.sending(left)
        try:
            answer = kind.call()
        except OutcomeUnknown:
            verdict = judge(api, book, kind, shared=shared)
            if verdict == "not_billed":
                continue
            return verdict
        except PlaceflowError as error:
            kind.refused(error)
            raise
        kind.received(answer)
        return "answered"
    return verdict


@contextmanager
def journaled(api: PlaceApiClient, run_id: str, in_flight: Callable[[], bool]) -> Iterator[None]:
    """The run active in the key's spend journal while it sends, and settled after unless
    something of it is left `in_flight` (a request whose answer was lost, a job at the
    service): a run that stops so stays active for whoever resumes it."""
    journal = api.journal
    if journal is not None:
        journal.active(run_id)
    try:
        yield
    finally:
        if journal is not None and not in_flight():
            journal.settled(run_id)
