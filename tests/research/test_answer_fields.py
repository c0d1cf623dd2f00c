"""A research answer is read tolerantly (#44 item 3): a field nobody asked for in a row's `fields`
(of any shape) is ignored, the asked fields are kept and booked; the answer is never thrown away
after the service billed it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from placeflow.api.models import DeepResearchResponse
from placeflow.emulator.responses import UNASKED_FIELD, with_unknown_fields
from placeflow.pipeline.research.load import Answer, answer_frame, charged, load_answer
from placeflow.pipeline.research.plan import Rates
from placeflow.store.warehouse import connect

from .conftest import spec

RATES = Rates(per_field=1, per_identity=1)
NOW = datetime(2026, 11, 28, 8, 0, tzinfo=UTC)


def _cell(status: str, value: Any = None) -> dict[str, Any]:
    return {"value": value, "confidence": "high", "status": status}


def _body() -> dict[str, Any]:
    """Two rows answering the three asked fields, each also carrying fields nobody asked for:
    the sandbox's x_ext (no status), a list, and one shaped as a cell with a billed status."""
    asked = {
        "cuisine": _cell("confirmed", "thai"),
        "has_outdoor_seating": _cell("unconfirmed"),
        "owner_person": _cell("estimated", "A. Owner"),
    }
    extra = {"x_list": [1, 2], "x_cell": _cell("confirmed", "not asked")}
    rows = [
        {"id": key, "status": "enriched", "outcome": "enriched", "identity": {"name": {}},
         "fields": {**asked, **extra}}
        for key in ("pk_a", "pk_b")
    ]  # fmt: skip
    body = {"success": True, "rows": rows, "request_id": "req_1",
            "meta": {"stopped_reason": "completed", "estimated_credits": 8}}  # fmt: skip
    out: dict[str, Any] = with_unknown_fields(body)
    return out


def test_an_answer_with_unasked_fields_parses_loads_and_books_the_asked_ones() -> None:
    """The answer parses (x_ext, a list, an unasked cell ignored); its rows are the asked
    fields' alone; the ledger books 2 rows x (3 fields + identity) = 8 credits."""
    body = _body()
    assert set(UNASKED_FIELD) <= set(body["rows"][0]["fields"])
    response = DeepResearchResponse.model_validate_json(json.dumps(body))
    research = spec()
    assert charged(response, research, RATES) == 8
    answer = Answer("run_1", 1, ["pk_a", "pk_b"], response, research, RATES, {}, NOW)
    frame = answer_frame(answer)
    assert sorted(set(frame.get_column("field"))) == [
        "cuisine", "has_outdoor_seating", "owner_person"
    ]  # fmt: skip
    assert frame.get_column("credits").sum() == 8
    con = connect(":memory:")
    try:
        con.execute(
            "insert into runs (run_id, created_at, status, mode, signature)"
            " values ('run_1', ?, 'running', 'research', 'research')",
            [NOW],
        )
        con.execute(  # its answer received: the request lifecycle's one move to answered
            "insert into research_requests (run_id, request_no, places, body, body_sha256,"
            " credits_max, state, planned_at) values ('run_1', 1, 2, '{}', 'x', 8, 'received', ?)",
            [NOW],
        )
        loaded = load_answer(con, answer)
        booked = con.execute(
            "select coalesce(sum(credits), 0) from credit_ledger where run_id = 'run_1'"
        ).fetchall()
    finally:
        con.close()
    assert loaded.charged == 8 and loaded.rows == 2
    assert booked == [(8,)]


def test_a_row_whose_fields_are_all_unknown_keeps_the_row() -> None:
    """A row whose `fields` holds only unknown entries parses: the row kept, no cell read."""
    body = {"success": True, "rows": [{"status": "abstain", "fields": {"x_ext": 3}}]}
    response = DeepResearchResponse.model_validate(body)
    assert response.rows[0].fields == {}
