"""Load a deep-research answer: rows into `research_answers` (one per place per field), the
credits it charged into the run's ledger (`placeflow.state.runbook.RunBook.charge`, a load
repeated after a crash replacing its charge), the request marked answered, in one transaction;
what it loaded is the run's `LoadInfo`, said as a chunk's load is (`placeflow.pipeline.load.told`:
RowsLoaded, CreditsCharged). The answer's own shape, a row per place per field, is research's.

What an answer charged follows the spec: nothing when research was unavailable
(stopped_reason agent_unavailable) or for a row that errored; else credits_per_field for every
field that was researched (confirmed, estimated, or unconfirmed: abstentions are billed), plus
the identity credit for a row that carries an identity block. Fields capped by cost or rejected
are not billed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from placeflow.api.errors import UnexpectedResponse
from placeflow.api.models import DeepResearchResponse, DeepResearchRow
from placeflow.api.retry import parse_timestamp
from placeflow.events import Emit, ignore
from placeflow.pipeline.load import LoadInfo, told
from placeflow.pipeline.research.plan import Rates, ResearchSpec
from placeflow.state.lifecycle import REQUESTS, move
from placeflow.state.runbook import RunBook
from placeflow.store.warehouse import insert_frame, transaction
from placeflow.support.text import cap_strings, cap_text

BILLED_STATUSES = frozenset({"confirmed", "estimated", "unconfirmed"})
UNAVAILABLE = "agent_unavailable"

ANSWER_SCHEMA: dict[str, Any] = {
    "run_id": pl.String,
    "place_key": pl.String,
    "request_no": pl.Int32,
    "position": pl.Int32,
    "field": pl.String,
    "field_sha": pl.String,
    "value": pl.String,
    "confidence": pl.String,
    "status": pl.String,
    "row_status": pl.String,
    "row_outcome": pl.String,
    "error": pl.String,
    "identity": pl.String,
    "name_verdict": pl.String,
    "address_verdict": pl.String,
    "verified_name": pl.String,
    "verified_address": pl.String,
    "credits": pl.Int32,
    "request_id": pl.String,
    "researched_at": pl.Datetime("us", "UTC"),
    "loaded_at": pl.Datetime("us", "UTC"),
}


class AnswerMismatch(UnexpectedResponse, ValueError):
    """An answer whose rows do not match the places the request sent."""


@dataclass(frozen=True)
class Answer:
    """One answered request, with what its rows are read and charged by."""

    run_id: str
    request_no: int
    place_keys: Sequence[str]
    """The places the request sent, in order: the answer's rows must be these."""
    response: DeepResearchResponse
    spec: ResearchSpec
    rates: Rates
    field_shas: dict[str, str]
    now: datetime


def asked(spec: ResearchSpec) -> list[str]:
    """The fields a request asks for (existence among them when validated): an answer's other
    fields are ignored, neither loaded nor counted as billed."""
    return [f.name for f in spec.fields] + (["existence"] if spec.validate_existence else [])


def row_credits(row: DeepResearchRow, spec: ResearchSpec, rates: Rates) -> int:
    if row.status == "error" or not row.fields:
        return 0
    cells = [row.fields.get(name) for name in asked(spec)]
    fields = sum(1 for c in cells if c is not None and c.status in BILLED_STATUSES)
    identity = spec.verify_identity and row.identity is not None and fields > 0
    return fields * rates.per_field + int(identity) * rates.per_identity


def charged(response: DeepResearchResponse, spec: ResearchSpec, rates: Rates) -> int:
    """What the answer charged, by the rules above."""
    if response.meta is not None and response.meta.stopped_reason == UNAVAILABLE:
        return 0
    return sum(row_credits(r, spec, rates) for r in response.rows)


def _verdict(identity: dict[str, Any] | None, part: str, key: str) -> str | None:
    block = (identity or {}).get(part)
    value = block.get(key) if isinstance(block, dict) else None
    return None if value is None else cap_text(str(value))


def answer_frame(answer: Answer) -> pl.DataFrame:
    """The long-form rows of one answer (at most 10 places x 21 fields)."""
    run_id, request_no, place_keys, response = (
        answer.run_id, answer.request_no, answer.place_keys, answer.response
    )  # fmt: skip
    spec, rates, field_shas, now = answer.spec, answer.rates, answer.field_shas, answer.now
    if len(response.rows) != len(place_keys):
        raise AnswerMismatch(
            f"request {request_no}: {len(response.rows)} rows answered {len(place_keys)} places"
        )
    names = asked(spec)
    researched = parse_timestamp(response.enrichment_timestamp)
    at = datetime.fromtimestamp(researched, now.tzinfo) if researched is not None else now
    records: list[dict[str, Any]] = []
    for position, (key, row) in enumerate(zip(place_keys, response.rows, strict=True)):
        if row.id is not None and row.id != key:
            raise AnswerMismatch(f"request {request_no}: row {position} is {row.id}, not {key}")
        identity = row.identity
        common = {
            "place_key": key,
            "position": position,
            "row_status": cap_text(row.status),
            "row_outcome": None if row.outcome is None else cap_text(row.outcome),
            "error": row.error,
            "identity": json.dumps(cap_strings(identity)) if identity is not None else None,
            "name_verdict": _verdict(identity, "name", "verdict"),
            "address_verdict": _verdict(identity, "address", "verdict"),
            "verified_name": _verdict(identity, "name", "value"),
            "verified_address": _verdict(identity, "address", "value"),
        }
        identity_due = row_credits(row, spec, rates) > 0 and spec.verify_identity and identity
        for name in names:
            cell = (row.fields or {}).get(name)
            status = "error" if row.status == "error" else cell.status if cell else "missing"
            billed = rates.per_field if status in BILLED_STATUSES else 0
            if billed and identity_due:
                billed += rates.per_identity
                identity_due = False
            records.append(
                {
                    **common,
                    "field": name,
                    "field_sha": field_shas.get(name, ""),
                    "value": json.dumps(cap_strings(cell.value))
                    if cell and cell.value is not None
                    else None,
                    "confidence": cap_text(cell.confidence) if cell and cell.confidence else None,
                    "status": cap_text(status),
                    "credits": billed,
                }
            )
    frame = pl.DataFrame(records, schema_overrides={"position": pl.Int32, "credits": pl.Int32})
    return frame.with_columns(
        pl.lit(run_id).alias("run_id"),
        pl.lit(request_no, pl.Int32).alias("request_no"),
        pl.lit(cap_strings(response.request_id), pl.String).alias("request_id"),
        pl.lit(at).cast(pl.Datetime("us", "UTC")).alias("researched_at"),
        pl.lit(now).cast(pl.Datetime("us", "UTC")).alias("loaded_at"),
    ).select(list(ANSWER_SCHEMA))


def load_answer(con: duckdb.DuckDBPyConnection, answer: Answer, *, emit: Emit = ignore) -> LoadInfo:
    """Answers, ledger and request state of one answered request, in one transaction; its
    rows (places answered), those answered without error, the places billed and the credits
    charged (nothing is held, so nothing released), told to `emit` as a chunk's load."""
    frame = answer_frame(answer)
    run_id, request_no, response, now = (
        answer.run_id, answer.request_no, answer.response, answer.now
    )  # fmt: skip
    credits = charged(response, answer.spec, answer.rates)
    meta = response.meta
    errored = sum(1 for r in response.rows if r.status == "error")
    capped = sum(1 for r in response.rows if r.status == "cost_capped")
    with transaction(con):
        con.execute(
            "delete from research_answers where run_id = ? and request_no = ?",
            [run_id, request_no],
        )
        insert_frame(con, "research_answers", frame)
        researched = len(response.rows) - errored
        RunBook(con, run_id).charge(
            request_no,
            response.request_id or f"rq-{run_id}-{request_no}",
            credits,
            f"{researched} row(s) researched, {errored} errored (free), {capped} capped",
            now,
            replaces=response.request_id or "",
        )
        move(  # the raw answer cleared: it is loaded now
            con, REQUESTS, "answered", (run_id, request_no), request_id=response.request_id,
            stopped_reason=meta.stopped_reason if meta else None,
            estimated_credits=meta.estimated_credits if meta else None, credits_charged=credits,
            answered_at=now, error=None, error_code=None, response=None,
        )  # fmt: skip
    billed = sum(1 for r in response.rows if row_credits(r, answer.spec, answer.rates))
    if credits == 0:  # research unavailable: nothing billed
        billed = 0
    rows = len(response.rows)
    info = LoadInfo(rows, rows - errored, errored, billed, credits, released=0)
    return told(answer.request_no, info, emit)
