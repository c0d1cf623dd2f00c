"""Send a research run's requests without ever paying twice for one.

Deep research has no Idempotency-Key, so a request is a kind of the run's write-ahead request
(`placeflow.pipeline.writeahead`, the rule a run's synchronous batches follow too), its moves
the research request lifecycle's (`placeflow.state.lifecycle.REQUESTS`):

    planned ──(commit)──▶ sent ──POST──▶ received (raw answer committed) ──load──▶ answered

A crash after `received` loads the stored answer on resume. A request left `sent` (a crash
mid-POST, or an answer lost on the wire) is judged by the key's usage against the run's ledger,
never blindly resent (`writeahead.judge`): nothing beyond the ledger means it was never billed
(sent again); a rise within what it could cost means it was billed but its answer lost (`lost`,
the charge ledgered). Otherwise (another run's spend on the key, a shared key) the possible
credits are recorded and the request held `uncertain`; `resend_uncertain` sends lost and
uncertain requests again. A usage that cannot be read leaves it `sent`, for the next invocation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import InsufficientCredits, PlaceflowError, Unprocessable, UsageUnknown
from placeflow.api.models import DeepResearchResponse
from placeflow.errors import Stop, StopRefused, stop
from placeflow.events import ChunkSubmitted, CreditsCharged, Emit, Note, ignore
from placeflow.pipeline import writeahead
from placeflow.pipeline.lostpost import usage_expected
from placeflow.pipeline.research.load import UNAVAILABLE, Answer, load_answer
from placeflow.pipeline.research.plan import ROUTE, Rates, ResearchSpec
from placeflow.pipeline.research.refused import error_name, rejected_fields
from placeflow.state.lifecycle import REQUEST_RESENDABLE, REQUESTS, move
from placeflow.state.runbook import RunBook
from placeflow.state.runread import ledger_totals
from placeflow.store.warehouse import sql_text, transaction
from placeflow.store.writer import Writer
from placeflow.support.text import cap_strings

LOST = "OUTCOME_UNKNOWN"
"""The error_code of a request whose answer was lost (not billed, lost or uncertain)."""

Hook = Callable[[str, int], None]
"""Called with a moment (sent, received, answered) and the count of requests sent so far."""


@dataclass(frozen=True)
class SendInfo:
    """The send stage's info: requests sent by this invocation, those left lost or uncertain,
    the research's `Stop` when one stopped it (a budget, the credits, a policy, unavailable
    research, a failure), and why it stopped. The run ends with the stop's own error
    (`Stop.ended`, its exit code from `errors.EXIT_CODES`) or its summary's status."""

    requests: int
    doubtful: int
    stop: Stop | None = None
    message: str | None = None

    @property
    def status(self) -> str:
        """completed; refused (the service's field policy: nothing more sent); interrupted."""
        if self.stop is not None:
            return self.stop.status
        return "interrupted" if self.doubtful else "completed"

    @property
    def refused(self) -> bool:
        """Whether it stopped because nothing more would be spent (a budget, the credits, a
        policy): its spending is not warned about, its end is the run's refusal."""
        return isinstance(self.stop, StopRefused)


@dataclass
class SendContext:
    db: Writer
    """The run's writer: `con` is its connection of the moment (let go while a request is out,
    so taken afresh after every wait)."""
    api: PlaceApiClient
    run_id: str
    spec: ResearchSpec
    rates: Rates
    field_shas: dict[str, str]
    now: Callable[[], datetime]
    sleep: Callable[[float], None]
    max_credits: int | None = None
    exclusive_key: bool = True
    resend_uncertain: bool = False
    hook: Hook | None = None
    emit: Emit = ignore
    unavailable_retries: int = 4
    unavailable_backoff: float = 2.0
    sent: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        return self.db.con

    def at(self, moment: str) -> None:
        if self.hook is not None:
            self.hook(moment, self.sent)


def _move(ctx: SendContext, name: str, request_no: int, **values: Any) -> None:
    """The request lifecycle's move `name` (`placeflow.state.lifecycle.REQUESTS`), refused
    (`IllegalMove`, nothing written) from a state it does not start from."""
    move(ctx.con, REQUESTS, name, (ctx.run_id, request_no), **values)


def _request(ctx: SendContext, request_no: int) -> tuple[str, int]:
    """A request's body and the most it can cost."""
    row = ctx.con.execute(
        sql_text("queries/research_request"), {"run_id": ctx.run_id, "request_no": request_no}
    ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1])


def _attempts(ctx: SendContext, request_no: int) -> int:
    """How many times the request was sent (0 before its first)."""
    found = ctx.con.execute(
        "select attempts from research_requests where run_id = ? and request_no = ?",
        [ctx.run_id, request_no],
    ).fetchall()
    return int(found[0][0] or 0) if found else 0


def _lost_ref(ctx: SendContext, request_no: int) -> str:
    """The ledger ref of a request's lost answer: rq-<run>-<request_no>, with -<attempt> after
    its first attempt (resent by --resend-uncertain and lost again: another charge, its own)."""
    attempt = max(_attempts(ctx, request_no), 1)
    ref = f"rq-{ctx.run_id}-{request_no}"
    return ref if attempt <= 1 else f"{ref}-{attempt}"


def _place_keys(ctx: SendContext, request_no: int) -> list[str]:
    rows = ctx.con.execute(
        "select place_key from run_places where run_id = ? and chunk_no = ? order by position",
        [ctx.run_id, request_no],
    ).fetchall()
    return [str(r[0]) for r in rows]


@dataclass
class _Request:
    """One research request as a kind of write-ahead request (`placeflow.pipeline.writeahead`):
    its moves are the research request lifecycle's (`placeflow.state.lifecycle.REQUESTS`)."""

    ctx: SendContext
    no: int
    most: int
    body: str
    _left: int | None = None

    @property
    def name(self) -> str:
        return f"request {self.no}"

    def left(self) -> int | None:
        """--max-credits less what the run was charged or may have been charged."""
        if self.ctx.max_credits is None:
            return None
        totals = ledger_totals(self.ctx.con, self.ctx.run_id)
        return self.ctx.max_credits - totals["charge"] - totals["possible"]

    def sending(self, left: int | None) -> None:
        self._left, ctx = left, self.ctx
        with transaction(ctx.con):  # written ahead: a crash from here on is judged
            _move(
                ctx, "sent", self.no, attempts=_attempts(ctx, self.no) + 1, sent_at=ctx.now(),
                max_credits_sent=left, usage_expected=usage_expected(_book(ctx)),
            )  # fmt: skip
        ctx.sent += 1
        ctx.at("sent")

    def call(self) -> DeepResearchResponse:
        payload: dict[str, Any] = json.loads(self.body)
        if self._left is not None:
            payload["max_credits"] = self._left
        return self.ctx.api.deep_research(payload)

    def received(self, answer: DeepResearchResponse) -> None:
        ctx = self.ctx
        with transaction(ctx.con):
            kept = json.dumps(cap_strings(answer.model_dump(mode="json")))  # stored: capped
            _move(ctx, "received", self.no, response=kept)
        ctx.at("received")

    def refused(self, error: PlaceflowError) -> None:
        """Nothing was charged: back in the plan, and the run stopped saying why."""
        ctx, no = self.ctx, self.no
        if isinstance(error, InsufficientCredits):
            code = error_name(error) or "quota_exceeded"
            _move(ctx, "not_sent", no, error=str(error), error_code=code)
            kind = "budget" if code == "max_credits_exceeded" else "credits"
            raise stop(kind, f"request {no} refused, nothing charged: {error}") from None
        if isinstance(error, Unprocessable):
            _move(ctx, "not_sent", no, error=str(error), error_code=error.error_code)
            rejected = rejected_fields(error)
            if rejected:
                why = "; ".join(f"{name}: {reason}" for name, reason in rejected.items())
                raise stop(
                    "policy",
                    f"the service refuses to research field(s) by policy ({why}); nothing was"
                    " charged. Drop or rename them and run again",
                ) from None
            raise stop("failed", f"request {no} refused: {error}") from None
        _move(ctx, "not_sent", no, error=str(error), error_code=type(error).__name__)
        raise stop("failed", f"request {no} not answered: {error}") from None

    def usage_unknown(self, error: UsageUnknown) -> None:
        """It stays sent: the next invocation settles it before sending more."""
        raise stop(
            "failed",
            f"request {self.no}: its answer was lost and the key's usage cannot be read now"
            f" ({error}); run the same command later: it settles the request from the usage"
            " before sending anything else",
        ) from None

    def not_billed(self) -> None:
        ctx = self.ctx
        _move(
            ctx, "not_billed", self.no,
            error="sent without an answer; the key's usage did not move: not billed",
            error_code=LOST,
        )  # fmt: skip

    def billed(self, credits: int) -> None:
        with self._lost(f"answer lost after billing ({credits} credits)") as (ctx, book, ref):
            book.charge(self.no, ref, credits, "answer lost; billed per the key's usage", ctx.now())
            _move(
                ctx, "lost", self.no, credits_charged=credits, error_code=LOST,
                error=f"billed {credits} credit(s) per the key's usage, but the answer was lost;"
                " --resend-uncertain buys it again",
            )  # fmt: skip
            ctx.emit(CreditsCharged(self.no, credits, 0))

    def uncertain(self, why: str) -> None:
        most = self.most
        with self._lost(f"uncertain, up to {most} credits") as (ctx, book, ref):
            why_not = "sent without an answer; the key's usage cannot tell whether it was billed"
            book.possible(self.no, ref, most, why_not)
            _move(
                ctx, "uncertain", self.no, possible_extra_credits=most, error_code=LOST,
                error=f"may have been billed (the usage cannot tell: {why}); not resent"
                " without --resend-uncertain",
            )  # fmt: skip

    @contextmanager
    def _lost(self, said: str) -> Iterator[tuple[SendContext, RunBook, str]]:
        """A lost answer's ledger entry (under its own ref) and move, in one transaction; said
        after it (the run's message lists it)."""
        ctx = self.ctx
        with transaction(ctx.con):
            yield ctx, _book(ctx), _lost_ref(ctx, self.no)
        ctx.notes.append(f"request {self.no}: {said}")
        ctx.emit(Note(ctx.notes[-1]))


def _kind(ctx: SendContext, request_no: int) -> _Request:
    body, credits_max = _request(ctx, request_no)
    return _Request(ctx, request_no, credits_max, body)


def _book(ctx: SendContext) -> RunBook:
    return RunBook(ctx.db, ctx.run_id, clock=ctx.now)


PLACED = {"not_billed": "planned", "billed": "lost", "uncertain": "uncertain"}
"""Where a request whose answer was lost is left, by the usage's verdict."""


def send_one(ctx: SendContext, request_no: int) -> str:
    """Send one planned request (`placeflow.pipeline.writeahead.send`) and load its answer:
    answered, unavailable, or the state a lost answer was judged to (planned: not billed, sent
    again; lost; uncertain). Raises `Stop` when the run must not go on."""
    kind = _kind(ctx, request_no)
    sent = writeahead.send(ctx.api, _book(ctx), kind, shared=not ctx.exclusive_key)
    return load_received(ctx, request_no) if sent == "answered" else PLACED[sent]


def load_received(ctx: SendContext, request_no: int) -> str:
    """Load a stored answer (or put a request research was unavailable for back in the plan)."""
    row = ctx.con.execute(
        "select response from research_requests where run_id = ? and request_no = ?",
        [ctx.run_id, request_no],
    ).fetchone()
    assert row is not None and row[0] is not None
    response = DeepResearchResponse.model_validate_json(row[0])
    place_keys = _place_keys(ctx, request_no)
    if response.meta is not None and response.meta.stopped_reason == UNAVAILABLE:
        with transaction(ctx.con):
            _move(
                ctx,
                "unavailable",
                request_no,
                response=None,
                error="research unavailable (agent_unavailable); nothing billed",
                error_code=UNAVAILABLE,
            )
        ctx.emit(Note(f"request {request_no}: research unavailable (nothing billed); retried"))
        return "unavailable"
    ctx.emit(ChunkSubmitted(request_no, ROUTE, len(place_keys), response.request_id))
    answer = Answer(
        run_id=ctx.run_id,
        request_no=request_no,
        place_keys=place_keys,
        response=response,
        spec=ctx.spec,
        rates=ctx.rates,
        field_shas=ctx.field_shas,
        now=ctx.now(),
    )
    load_answer(ctx.con, answer, emit=ctx.emit)  # said as a chunk's load is
    ctx.at("answered")
    return "answered"


def resolve_sent(ctx: SendContext, request_no: int) -> str:
    """Decide what became of a request sent without an answer, from the key's usage
    (`placeflow.pipeline.writeahead.judge`): planned, lost or uncertain."""
    verdict = writeahead.judge(
        ctx.api, _book(ctx), _kind(ctx, request_no), shared=not ctx.exclusive_key
    )
    return PLACED[verdict]


def send_all(ctx: SendContext) -> None:
    """Finish what a crash left, then send every planned request in order. The key's journal
    has the run active meanwhile, and settled after unless a request is left sent without its
    answer (`placeflow.pipeline.writeahead.journaled`)."""
    with writeahead.journaled(ctx.api, ctx.run_id, lambda: bool(_states(ctx, "sent"))):
        _send_all(ctx)


def _send_all(ctx: SendContext) -> None:
    """A run's order (`placeflow.runner.carry.Carry.run`) on research's requests: what a crash
    left, the held ones --resend-uncertain buys again, then the plan."""
    ended_before(ctx)
    resend_held(ctx)
    send_planned(ctx)


def ended_before(ctx: SendContext) -> None:
    """What a crash left, as a run's `Carry.ended_before`: an answer received is loaded from its
    row, never bought again; one sent without its answer is judged by the key's usage."""
    for request_no, state in _states(ctx, "received", "sent"):
        if state == "received":
            load_received(ctx, request_no)
        else:
            resolve_sent(ctx, request_no)


def resend_held(ctx: SendContext) -> None:
    """With --resend-uncertain, as a run's `Carry.resend_held`: the requests held as possibly
    billed (lost, uncertain) go back to the plan, each said (it may pay for them twice)."""
    if not ctx.resend_uncertain:
        return
    with transaction(ctx.con):
        held = _states(ctx, *REQUEST_RESENDABLE)
        for request_no, _ in held:
            _move(ctx, "resend", request_no)
    for request_no, state in held:
        again = "its places are sent again (--resend-uncertain)"
        ctx.emit(Note(f"request {request_no}: {state}; {again}"))


def send_planned(ctx: SendContext) -> None:
    """Every planned request in order, each loaded before the next goes out; research that is
    unavailable (agent_unavailable, never billed: research's own) is tried again with backoff,
    and the run stopped after `unavailable_retries`."""
    while True:
        pending = _states(ctx, "planned")
        if not pending:
            return
        request_no = pending[0][0]
        tries = 0
        while send_one(ctx, request_no) == "unavailable":
            tries += 1
            if tries > ctx.unavailable_retries:
                raise stop(
                    "unavailable",
                    "research is unavailable (agent_unavailable, nothing billed) after"
                    f" {tries} tries: run the same command later to go on",
                )
            ctx.sleep(ctx.unavailable_backoff * 2 ** (tries - 1))


def _states(ctx: SendContext, *states: str) -> list[tuple[int, str]]:
    rows = ctx.con.execute(
        sql_text("queries/research_states"), {"run_id": ctx.run_id, "states": list(states)}
    ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]
