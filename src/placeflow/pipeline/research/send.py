"""Send a research run's requests without ever paying twice for one.

Deep research has no Idempotency-Key, so each request's state is written ahead:

    planned ──(commit)──▶ sent ──POST──▶ received (raw answer committed) ──load──▶ answered

A crash after `received` loads the stored answer on resume. A request left `sent` (a crash
mid-POST, or an answer lost on the wire) is resolved by the key's usage, not by resending: the
run knows what the key's current_usage should be just before the POST (`usage_expected`); when
the key is used by this run alone, usage unchanged means the request was never billed (sent
again), and a rise within what it could cost means it was billed but its answer lost (`lost`,
the charge ledgered). Otherwise, or on a shared key, the possible credits are recorded and the
request held `uncertain`; `resend_uncertain` sends lost and uncertain requests again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import (
    ApiError,
    InsufficientCredits,
    OutcomeUnknown,
    PlaceflowError,
    Unprocessable,
    UsageUnknown,
)
from placeflow.api.models import DeepResearchResponse
from placeflow.errors import stop
from placeflow.events import ChunkSubmitted, CreditsCharged, Emit, Note, RowsLoaded, ignore
from placeflow.pipeline.research.load import UNAVAILABLE, Answer, load_answer
from placeflow.pipeline.research.plan import ROUTE, Rates, ResearchSpec
from placeflow.pipeline.research.refused import error_name, rejected_fields
from placeflow.state.lifecycle import REQUEST_RESENDABLE, REQUESTS, move
from placeflow.state.runbook import RunBook
from placeflow.store.warehouse import sql_text, transaction
from placeflow.store.writer import Writer
from placeflow.support.text import cap_strings

Hook = Callable[[str, int], None]
"""Called with a moment (sent, received, answered) and the count of requests sent so far."""


@dataclass(frozen=True)
class SendInfo:
    """The send stage's info: requests sent by this invocation, those left lost or uncertain,
    and how the sending ended (its exit code, the run's status, why it stopped)."""

    requests: int
    doubtful: int
    exit_code: int
    status: str
    message: str | None = None


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
    usage_before: int | None = None
    """The key's usage as read afresh by this invocation, before it sent anything: what a new
    request's expected usage starts from (with the charges booked since, `charged_before`)."""
    charged_before: int = 0
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


def ledger_totals(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int]:
    row = con.execute(sql_text("queries/research_ledger_totals"), {"run_id": run_id}).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def _move(ctx: SendContext, name: str, request_no: int, **values: Any) -> None:
    """The request lifecycle's move `name` (`placeflow.state.lifecycle.REQUESTS`), refused
    (`IllegalMove`, nothing written) from a state it does not start from."""
    move(ctx.con, REQUESTS, name, (ctx.run_id, request_no), **values)


def _request(ctx: SendContext, request_no: int) -> tuple[str, int, str, int | None, int]:
    row = ctx.con.execute(
        sql_text("queries/research_request"), {"run_id": ctx.run_id, "request_no": request_no}
    ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1]), str(row[2]), row[3], int(row[4])


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


def send_one(ctx: SendContext, request_no: int) -> str:
    """Send one planned request and load its answer: answered, unavailable, or the state a
    lost answer was resolved to. Raises `Stop` when the run must not go on."""
    body, credits_max, _, _, _ = _request(ctx, request_no)
    charged, possible = ledger_totals(ctx.con, ctx.run_id)
    left = None if ctx.max_credits is None else ctx.max_credits - charged - possible
    if left is not None and credits_max > left:
        raise stop(
            "budget",
            f"the budget has {max(left, 0):,} credit(s) left and the next request can cost"
            f" {credits_max:,}: stopped before it; rerun with a higher --max-credits to go on",
        )
    since = charged - ctx.charged_before
    expected = None if ctx.usage_before is None else ctx.usage_before + since
    with transaction(ctx.con):  # written ahead: a crash from here on is resolved, not resent
        _move(
            ctx, "sent", request_no, attempts=_attempts(ctx, request_no) + 1, sent_at=ctx.now(),
            usage_expected=expected, max_credits_sent=left,
        )  # fmt: skip
    ctx.sent += 1
    ctx.at("sent")
    payload: dict[str, Any] = json.loads(body)
    if left is not None:
        payload["max_credits"] = left
    try:
        response = ctx.api.deep_research(payload)
    except OutcomeUnknown:
        return resolve_sent(ctx, request_no)
    except InsufficientCredits as exc:
        code = error_name(exc) or "quota_exceeded"
        _move(ctx, "not_sent", request_no, error=str(exc), error_code=code)
        kind = "budget" if code == "max_credits_exceeded" else "credits"
        raise stop(kind, f"request {request_no} refused, nothing charged: {exc}") from None
    except Unprocessable as exc:
        _move(ctx, "not_sent", request_no, error=str(exc), error_code=exc.error_code)
        rejected = rejected_fields(exc)
        if rejected:
            why = "; ".join(f"{name}: {reason}" for name, reason in rejected.items())
            raise stop(
                "policy",
                f"the service refuses to research field(s) by policy ({why}); nothing was"
                " charged. Drop or rename them and run again",
            ) from None
        raise stop("failed", f"request {request_no} refused: {exc}") from None
    except (ApiError, PlaceflowError) as exc:
        _move(ctx, "not_sent", request_no, error=str(exc), error_code=type(exc).__name__)
        raise stop("failed", f"request {request_no} not answered: {exc}") from None
    with transaction(ctx.con):
        kept = json.dumps(cap_strings(response.model_dump(mode="json")))  # stored: capped
        _move(ctx, "received", request_no, response=kept)
    ctx.at("received")
    return load_received(ctx, request_no)


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
    loaded = load_answer(ctx.con, answer)
    ok = loaded.rows - loaded.errored
    ctx.emit(RowsLoaded(request_no, loaded.rows, ok, loaded.errored))
    ctx.emit(CreditsCharged(request_no, loaded.charged, 0))
    ctx.at("answered")
    return "answered"


def resolve_sent(ctx: SendContext, request_no: int) -> str:
    """Decide what became of a request sent without an answer, from the key's usage."""
    _, credits_max, _, expected, _ = _request(ctx, request_no)
    try:
        usage = ctx.api.usage().current_usage
    except UsageUnknown as exc:  # it stays sent: the next run settles it before sending more
        raise stop(
            "failed",
            f"request {request_no}: its answer was lost and the key's usage cannot be read now"
            f" ({exc}); run the same command later: it settles the request from the usage"
            " before sending anything else",
        ) from None
    delta = None if expected is None else usage - expected
    ref = _lost_ref(ctx, request_no)
    now = ctx.now()
    alone = ctx.exclusive_key and not _others_spent(ctx, request_no)
    book = RunBook(ctx.db, ctx.run_id, clock=ctx.now)
    with transaction(ctx.con):
        if alone and delta == 0:
            _move(
                ctx,
                "not_billed",
                request_no,
                error="sent without an answer; the key's usage did not move: not billed",
                error_code="OUTCOME_UNKNOWN",
            )
            return "planned"
        if alone and delta is not None and 0 < delta <= credits_max:
            book.charge(
                request_no, ref, delta, "answer lost; billed per the key's usage delta", now
            )
            _move(
                ctx,
                "lost",
                request_no,
                credits_charged=delta,
                error=f"billed {delta} credit(s) per the key's usage, but the answer was lost;"
                " --resend-uncertain buys it again",
                error_code="OUTCOME_UNKNOWN",
            )
            ctx.notes.append(f"request {request_no}: answer lost after billing ({delta} credits)")
            ctx.emit(CreditsCharged(request_no, delta, 0))
            ctx.emit(Note(ctx.notes[-1]))
            return "lost"
        book.possible(
            request_no, ref, credits_max,
            "sent without an answer; the key's usage cannot tell whether it was billed",
        )  # fmt: skip
        _move(
            ctx,
            "uncertain",
            request_no,
            possible_extra_credits=credits_max,
            error="may have been billed (usage cannot tell: the key is shared or moved"
            " otherwise); not resent without --resend-uncertain",
            error_code="OUTCOME_UNKNOWN",
        )
    ctx.notes.append(f"request {request_no}: uncertain, up to {credits_max} credits")
    ctx.emit(Note(ctx.notes[-1]))
    return "uncertain"


def _others_spent(ctx: SendContext, request_no: int) -> list[str]:
    """Other runs whose spend on the key was in flight since this request was sent (the key's
    journal): the usage delta is then not this request's alone."""
    journal = ctx.api.journal
    if journal is None:
        return []
    rows = ctx.con.execute(
        "select sent_at from research_requests where run_id = ? and request_no = ?",
        [ctx.run_id, request_no],
    ).fetchall()
    sent = rows[0][0] if rows and rows[0][0] is not None else None
    return journal.others(ctx.run_id, since=sent.timestamp()) if sent else []


def _fresh_usage(ctx: SendContext) -> None:
    """The usage new requests are judged from, read afresh by this invocation once what an
    earlier one left is settled (a reading kept from before a stop would count whatever the
    key spent meanwhile as this run's)."""
    if ctx.usage_before is None:
        return
    try:
        ctx.usage_before = ctx.api.usage().current_usage
    except UsageUnknown:
        ctx.usage_before = None  # new requests' lost answers are then held, never guessed
    ctx.charged_before = ledger_totals(ctx.con, ctx.run_id)[0]


def send_all(ctx: SendContext) -> None:
    """Finish what a crash left, then send every planned request in order (the key's usage
    read afresh between the two). The key's journal has the run active meanwhile, and settled
    after unless a request is left sent without its answer."""
    journal = ctx.api.journal
    if journal is not None:
        journal.active(ctx.run_id)
    try:
        _send_all(ctx)
    finally:
        if journal is not None and not _states(ctx, "sent"):
            journal.settled(ctx.run_id)


def _send_all(ctx: SendContext) -> None:
    leftovers = _states(ctx, "received", "sent")
    for request_no, state in leftovers:
        if state == "received":
            load_received(ctx, request_no)
        else:
            resolve_sent(ctx, request_no)
    if ctx.resend_uncertain:
        with transaction(ctx.con):
            for request_no, _ in _states(ctx, *REQUEST_RESENDABLE):
                _move(ctx, "resend", request_no)
    if leftovers and _states(ctx, "planned"):
        _fresh_usage(ctx)
    while True:
        pending = _states(ctx, "planned")
        if not pending:
            return
        request_no = pending[0][0]
        tries = 0
        while (result := send_one(ctx, request_no)) == "unavailable":
            tries += 1
            if tries > ctx.unavailable_retries:
                raise stop(
                    "unavailable",
                    "research is unavailable (agent_unavailable, nothing billed) after"
                    f" {tries} tries: run the same command later to go on",
                )
            ctx.sleep(ctx.unavailable_backoff * 2 ** (tries - 1))
        del result


def _states(ctx: SendContext, *states: str) -> list[tuple[int, str]]:
    rows = ctx.con.execute(
        sql_text("queries/research_states"), {"run_id": ctx.run_id, "states": list(states)}
    ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]
