"""places_latest keeps the latest of each kind of fact; an outcome is fresh for any request it
answers (issue 12, items 13, 16 and 17)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl

from placeflow.pipeline.fresh import fresh_keys
from tests.warehouse.dataset import load
from tests.warehouse.helpers import (
    SIGNATURES,
    T0,
    add_run,
    attribute,
    enrich_line,
    plan_chunk,
    validate_line,
    write_lines,
)

DAY = timedelta(days=1)
PHONE_ONLY = "enrich|phone|no-summary"


def _run(
    con: duckdb.DuckDBPyConnection,
    tmp: Path,
    run_id: str,
    kind: str,
    day: int,
    lines: list[dict[str, object]],
    signature: str | None = None,
    attributes: list[str] | None = None,
) -> None:
    at = T0 + day * DAY
    extra = (
        {} if signature is None else {"signature": signature, "attributes": signature.split("|")[1]}
    )
    add_run(con, run_id, kind, created_at=at, **extra)
    keys = [str(line["id"]) for line in lines]
    plan_chunk(con, run_id, 0, keys, kind=kind, attributes=attributes)
    load(
        con,
        run_id,
        0,
        kind,
        write_lines(tmp / f"{run_id}.jsonl.gz", lines),
        "job",
        len(keys),
        now=at,
    )


def _latest(con: duckdb.DuckDBPyConnection, key: str) -> dict[str, object]:
    frame: pl.DataFrame = con.sql(
        "select * from places_latest where place_key = ?", params=[key]
    ).pl()
    return frame.row(0, named=True)


def test_a_validation_does_not_hide_the_enrichment(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Enrich then validate: the verdict is the validation's, the phone and website the
    enrichment's."""
    _run(con, tmp_path, "e1", "enrich", 0, [enrich_line("A")])
    _run(
        con,
        tmp_path,
        "v2",
        "validate",
        1,
        [
            validate_line(
                "A",
                operational_status={
                    "status": "closed",
                    "closure_confidence": 0.8,
                    "closure_reason": "permanent",
                },
            )
        ],
    )
    row = _latest(con, "A")
    assert (row["run_id"], row["mode"], row["operational_status"]) == ("v2", "validate", "closed")
    assert (row["phone_number"], row["website_url"]) == ("+14155550100", "https://example.com")
    assert row["phone_confidence"] == "high"


def test_a_newer_failure_hides_no_good_value(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A newer failed enrichment leaves the older verdict and values in place; a place that
    only failed shows its error."""
    _run(con, tmp_path, "e1", "enrich", 0, [enrich_line("A"), enrich_line("B", success=False)])
    _run(con, tmp_path, "e2", "enrich", 1, [enrich_line("A", success=False)])
    good = _latest(con, "A")
    assert (good["run_id"], good["success"], good["phone_number"]) == ("e1", True, "+14155550100")
    failed = _latest(con, "B")
    assert (failed["success"], failed["error_code"]) == (False, "EXTERNAL_API_ERROR")


def test_each_attribute_comes_from_the_newest_enrichment_that_asked_for_it(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A later phone-only enrichment updates the phone and keeps the earlier website."""
    newer = enrich_line("A", status=None, operational_status=None)
    newer["attributes"] = {"phone": attribute({"number": "+14155550199"})}
    _run(con, tmp_path, "e1", "enrich", 0, [enrich_line("A")])
    _run(con, tmp_path, "e2", "enrich", 1, [newer], signature=PHONE_ONLY, attributes=["phone"])
    row = _latest(con, "A")
    assert (row["phone_number"], row["website_url"]) == ("+14155550199", "https://example.com")
    assert row["run_id"] == "e1"  # the verdict: e2 did not ask for existence or open_closed


def test_an_outcome_is_fresh_for_any_request_it_answers(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """After a default enrichment, a validate and a phone-only enrich find the place fresh; a
    validation makes no enrichment fresh; a failed enrichment makes nothing fresh."""
    _run(con, tmp_path, "e1", "enrich", 0, [enrich_line("A"), enrich_line("B", success=False)])
    _run(con, tmp_path, "v2", "validate", 0, [validate_line("C")])
    keys = pl.DataFrame({"place_key": ["A", "B", "C"]})

    def fresh(signature: str) -> list[str]:
        found = fresh_keys(con, keys, signature=signature, max_age=30 * DAY, now=T0 + DAY)
        return [str(k) for k in found["place_key"]]

    assert fresh(SIGNATURES["validate"]) == ["A", "C"]
    assert fresh(PHONE_ONLY) == ["A"]
    assert fresh(SIGNATURES["enrich"]) == ["A"]
    assert fresh("enrich|email|no-summary") == []
    assert fresh("enrich|phone|summary") == []
