"""Issue 34 item 4: every string a server sent is stored capped, as documented (2,000
characters and a `… [truncated N characters]` marker, `placeflow.support.text.cap_text`): a job's
result
file read by DuckDB itself (sql/load/lines_*.sql, macro server_text) as a parsed answer is, and a
research answer's strings too."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from placeflow.api.models import DeepResearchResponse
from placeflow.pipeline.load import load_result
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.load import Answer, answer_frame
from placeflow.pipeline.research.plan import Rates, ResearchSpec
from placeflow.support.text import MAX_SERVER_TEXT, cap_text
from tests.warehouse.helpers import (
    T0,
    add_run,
    attribute,
    enrich_line,
    keys,
    operational,
    plan_chunk,
    validate_line,
    write_lines,
)

HUGE = "E" * 100_099
"""The red team's error: 100,099 characters."""


def _load(con: duckdb.DuckDBPyConnection, path: Path, kind: str) -> None:
    load_result(
        con, run_id="r1", chunk_no=0, kind=kind, path=path,  # type: ignore[arg-type]  # a str, the Literal
        billing="job", held=2, ref="ref0", now=T0,
    )  # fmt: skip


@pytest.mark.parametrize(
    "text", ["", "short", "x" * MAX_SERVER_TEXT, "y" * (MAX_SERVER_TEXT + 1), HUGE, "é" * 5_000]
)
def test_the_sql_macro_caps_as_python_does(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """server_text(s) in SQL is cap_text(s) in Python, character for character."""
    (stored,) = con.execute("select server_text(?)", [text]).fetchone() or (None,)
    assert stored == cap_text(text)


def test_an_enrich_file_is_stored_capped(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """A failed row's 100,099-character error and a success's summary, closure reason, website,
    handle and cell strings are each stored as cap_text makes them."""
    add_run(con, "r1")
    a, b = keys(2)
    plan_chunk(con, "r1", 0, [a, b])
    ok = enrich_line(
        a,
        place_summary=HUGE,
        operational_status=operational("closed", 0.9, HUGE),
        request_id=HUGE,
        attributes={"website": attribute({"url": HUGE}, confidence=HUGE),
                    "facebook": attribute({"url": HUGE, "handle": HUGE})},
    )  # fmt: skip
    failed = enrich_line(b, success=False, error=HUGE, error_code=HUGE)
    _load(con, write_lines(tmp_path / "r.jsonl.gz", [ok, failed]), "enrich")
    columns = (
        "error, error_code, request_id, place_summary, closure_reason, website_url,"
        " website_confidence, facebook_url, facebook_handle"
    )
    rows = con.execute(f"select {columns} from enrichments order by position").fetchall()
    capped = cap_text(HUGE)
    assert len(capped) < MAX_SERVER_TEXT + 40
    assert rows[0] == (None, None, capped, capped, capped, capped, capped, capped, capped)
    assert rows[1][:2] == (capped, capped)


def test_a_validate_file_is_stored_capped(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """A validation's error, error code and closure reason are stored capped."""
    add_run(con, "r1", "validate")
    a, b = keys(2)
    plan_chunk(con, "r1", 0, [a, b])
    ok = validate_line(a, operational_status=operational("closed", 0.9, HUGE))
    failed = validate_line(b, success=False, error=HUGE, error_code=HUGE)
    _load(con, write_lines(tmp_path / "r.jsonl.gz", [ok, failed]), "validate")
    rows = con.execute(
        "select closure_reason, error, error_code from validations order by position"
    ).fetchall()
    capped = cap_text(HUGE)
    assert rows == [(capped, None, None), (None, capped, capped)]


def test_a_research_answer_is_stored_capped() -> None:
    """A research row's string value, confidence, outcome and identity strings are capped, the
    value still the JSON of a string."""
    import json

    spec = ResearchSpec(build_specs(("owner_person",)), verify_identity=True)
    response = DeepResearchResponse.model_validate(
        {
            "success": True,
            "request_id": HUGE,
            "rows": [
                {
                    "id": "pk0",
                    "status": "answered",
                    "outcome": HUGE,
                    "identity": {"name": {"value": HUGE, "verdict": "confirmed"}},
                    "fields": {"owner_person": {"value": HUGE, "confidence": HUGE,
                                                "status": "found"}},
                }
            ],
        }
    )  # fmt: skip
    answer = Answer(
        run_id="r1", request_no=0, place_keys=["pk0"], response=response, spec=spec,
        rates=Rates(per_field=1, per_identity=1), field_shas={},
        now=datetime(2026, 11, 1, tzinfo=UTC),
    )  # fmt: skip
    row = answer_frame(answer).row(0, named=True)
    capped = cap_text(HUGE)
    assert json.loads(row["value"]) == capped and row["confidence"] == capped
    assert row["row_outcome"] == capped and row["verified_name"] == capped
    assert row["request_id"] == capped
    assert json.loads(row["identity"])["name"]["value"] == capped
