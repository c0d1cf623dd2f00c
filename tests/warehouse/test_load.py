"""load_result: one transaction per chunk, verified against the plan, billed by the bulk rule."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.errors import LoadError
from placeflow.pipeline.load import LoadInfo, load_result
from tests.warehouse.helpers import (
    T0,
    add_run,
    attribute,
    enrich_line,
    keys,
    operational,
    plan_chunk,
    table_rows,
    validate_line,
    write_lines,
)


def load(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    *,
    kind: str = "enrich",
    billing: str = "job",
    held: int | None = None,
    chunk_no: int = 0,
    **kwargs: Any,
) -> LoadInfo:
    rows = con.execute(
        "select rows from jobs where run_id = 'r1' and chunk_no = ?", [chunk_no]
    ).fetchone()
    assert rows is not None
    return load_result(
        con,
        run_id="r1",
        chunk_no=chunk_no,
        kind=kind,  # type: ignore[arg-type]  # a str parameter, load_result's Literal
        path=path,
        billing=billing,  # type: ignore[arg-type]  # the same
        held=rows[0] if held is None else held,
        ref=f"ref{chunk_no}",
        now=T0,
        **kwargs,
    )


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "enrichments": table_rows(con, "enrichments", "run_id, place_key"),
        "validations": table_rows(con, "validations", "run_id, place_key"),
        "credit_ledger": table_rows(con, "credit_ledger", "run_id, chunk_no, kind"),
        "jobs": table_rows(con, "jobs", "run_id, chunk_no"),
    }


@pytest.fixture
def chunk(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Run r1 (enrich) with one planned job chunk of five places."""
    add_run(con, "r1")
    places = keys(5)
    plan_chunk(con, "r1", 0, places)
    return places


def test_load_writes_one_row_per_line_in_position_order(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """Each line becomes one enrichments row at its line's position, the job marked loaded."""
    path = write_lines(tmp_path / "r.jsonl.gz", [enrich_line(k) for k in chunk])
    info = load(con, path)
    assert info == LoadInfo(rows=5, succeeded=5, failed=0, billable=5, charged=5, released=0)
    rows = con.execute(
        "select place_key, position, chunk_no, phone_number, website_url,"
        " enriched_at from enrichments order by position"
    ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(k, i, 0) for i, k in enumerate(chunk)]
    assert rows[0][3:] == ("+14155550100", "https://example.com", T0)
    job = con.execute(
        "select status, rows_loaded, credits_charged, credits_released,"
        " loaded_at, result_path, error from jobs"
    ).fetchone()
    assert job == ("loaded", 5, 5, 0, T0, str(path), None)


def test_loading_a_chunk_twice_leaves_the_same_rows(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """A second load of the same file replaces, never duplicates, outcomes and ledger rows."""
    lines = [enrich_line(k) for k in chunk]
    lines[1] = enrich_line(chunk[1], success=False)
    path = write_lines(tmp_path / "r.jsonl.gz", lines)
    first = load(con, path)
    before = snapshot(con)
    second = load(con, path)
    assert first == second
    assert snapshot(con) == before
    assert len(before["enrichments"]) == 5
    assert [(r[3], r[4]) for r in before["credit_ledger"]] == [
        ("charge", 4),
        ("hold", 5),
        ("release", 1),
    ]


def wrong_files(chunk: list[str]) -> dict[str, list[dict[str, Any] | str]]:
    good: list[dict[str, Any] | str] = [enrich_line(k) for k in chunk]
    return {
        "one line short": good[:-1],
        "one line too many": [*good, enrich_line("extra")],
        "two lines swapped": [good[1], good[0], *good[2:]],
        "an unknown id": [*good[:-1], enrich_line("stranger")],
        "an id missing": [*good[:-1], enrich_line(chunk[-1], id=None)],
        "a broken line": [*good[:-1], '{"success": true, "id": '],
        "a wrong type": [*good[:-1], enrich_line(chunk[-1], status="high")],
    }


WHY = {
    "one line short": "the file has 4 lines and the chunk 5 places",
    "one line too many": "the file has 6 lines and the chunk 5 places",
    "two lines swapped": "2 line.s. carry another place than planned; line 1 has id 'pk000001'",
    "an unknown id": "1 line.s. carry another place than planned; line 5 has id 'stranger'",
    "an id missing": "1 line.s. carry another place than planned; line 5 has id None",
    "a broken line": "cannot be read: .*JSON",
    "a wrong type": "cannot be read: |status is VARCHAR, not an object",
}


@pytest.mark.parametrize("case", list(wrong_files(keys(5))))
def test_a_file_that_does_not_match_its_chunk_writes_nothing(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path, case: str
) -> None:
    """A file with wrong count, order, ids or content raises LoadError saying which; the earlier
    load stays."""
    load(con, write_lines(tmp_path / "good.jsonl.gz", [enrich_line(k) for k in chunk]))
    before = snapshot(con)
    bad = write_lines(tmp_path / "bad.jsonl.gz", wrong_files(chunk)[case])
    with pytest.raises(LoadError, match=WHY[case]) as info:
        load(con, bad)
    assert "nothing was loaded" in str(info.value)
    assert snapshot(con) == before
    assert con.execute("select count(*) from duckdb_tables() where temporary").fetchone() == (0,)


def test_a_file_that_is_not_gzip_is_a_load_error(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """An unreadable file raises LoadError and writes nothing."""
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(LoadError, match="cannot be read"):
        load(con, path)
    assert con.execute("select count(*) from enrichments").fetchone() == (0,)
    assert con.execute("select status from jobs").fetchone() == ("completed",)


def test_a_gzip_stream_that_breaks_off_is_a_load_error(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """A file cut short inside its gzip stream (the fetch leaves that proof to this read)
    raises LoadError and writes nothing, even when the lines before the cut are whole."""
    body = gzip.compress(
        b"".join(json.dumps(enrich_line(k)).encode() + b"\n" for k in chunk), mtime=0
    )
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(body[:-8])
    with pytest.raises(LoadError, match="cannot be read"):
        load(con, path)
    assert con.execute("select count(*) from enrichments").fetchone() == (0,)
    assert con.execute("select status from jobs").fetchone() == ("completed",)


def test_a_chunk_with_no_planned_places_is_a_load_error(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """Loading into a chunk the run never planned raises LoadError."""
    path = write_lines(tmp_path / "r.jsonl.gz", [enrich_line(k) for k in chunk])
    with pytest.raises(LoadError, match="no planned places"):
        load_result(
            con, run_id="r1", chunk_no=7, kind="enrich", path=path, billing="job", held=5, ref="x"
        )


ENRICH_BILLABLE = {
    "every value found": (enrich_line("k"), True),
    "one value only": (
        enrich_line(
            "k",
            attributes={"phone": attribute({"number": "1"})},
            status=None,
            operational_status=None,
        ),
        True,
    ),
    "only an operational status": (enrich_line("k", attributes={}, status=None), True),
    "a status block with a null confidence": (
        enrich_line(
            "k", attributes=None, status={"existence_confidence": None}, operational_status=None
        ),
        True,
    ),
    "nothing found": (
        enrich_line(
            "k", attributes={"phone": attribute(None)}, status=None, operational_status=None
        ),
        False,
    ),
    "a failed row": (enrich_line("k", success=False), False),
    "a failed row carrying values": (
        enrich_line("k", success=False, attributes={"phone": attribute({"n": 1})}),
        False,
    ),
    # issue 34 item 6: fields the spec never names bill nothing
    "a status block of only an unknown field": (
        enrich_line(
            "k", attributes={"phone": attribute(None)}, status={"x_ext": 1}, operational_status=None
        ),
        False,
    ),
    "an operational status of only an unknown field": (
        enrich_line("k", attributes=None, status=None, operational_status={"x_ext": "open"}),
        False,
    ),
    "an unknown attribute with a value": (
        enrich_line(
            "k", attributes={"x_ext": attribute({"n": 1})}, status=None, operational_status=None
        ),
        False,
    ),
    "a null status block with an unknown field too": (
        enrich_line(
            "k",
            attributes=None,
            status={"existence_confidence": None, "x_ext": 1},
            operational_status=None,
        ),
        True,
    ),
}


@pytest.mark.parametrize("case", list(ENRICH_BILLABLE))
def test_enrich_billable_rule(con: duckdb.DuckDBPyConnection, tmp_path: Path, case: str) -> None:
    """Enrich rows are billable when they succeeded with a value or a non-null status block."""
    add_run(con, "r1")
    plan_chunk(con, "r1", 0, ["k"])
    line, billable = ENRICH_BILLABLE[case]
    info = load(con, write_lines(tmp_path / "r.jsonl.gz", [line]))
    assert con.execute("select billable from enrichments").fetchone() == (billable,)
    assert info.billable == int(billable)


VALIDATE_BILLABLE = {
    "status and confidence": (validate_line("k"), True),
    "only a confidence": (validate_line("k", operational_status=None), True),
    "only a status": (validate_line("k", existence_confidence=None), True),
    "neither": (validate_line("k", existence_confidence=None, operational_status=None), False),
    "a failed row": (validate_line("k", success=False), False),
    "a status of only an unknown field": (
        validate_line("k", existence_confidence=None, operational_status={"x_ext": "open"}),
        False,
    ),
}


@pytest.mark.parametrize("case", list(VALIDATE_BILLABLE))
def test_validate_billable_rule(con: duckdb.DuckDBPyConnection, tmp_path: Path, case: str) -> None:
    """Validate rows are billable when they succeeded with a confidence or a status."""
    add_run(con, "r1", "validate")
    plan_chunk(con, "r1", 0, ["k"], kind="validate")
    line, billable = VALIDATE_BILLABLE[case]
    load(con, write_lines(tmp_path / "r.jsonl.gz", [line]), kind="validate")
    assert con.execute("select billable from validations").fetchone() == (billable,)


def ledger(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(
        "select chunk_no, ref, kind, credits from credit_ledger where kind <> 'hold' order by kind"
    ).fetchall()


def test_job_billing_charges_billable_rows_and_releases_the_rest(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """A job charges its billable rows and releases the rest of its hold."""
    lines = [enrich_line(k) for k in chunk]
    lines[0] = enrich_line(chunk[0], success=False)
    lines[1] = enrich_line(chunk[1], attributes={}, status=None, operational_status=None)
    info = load(con, write_lines(tmp_path / "r.jsonl.gz", lines))
    assert (info.succeeded, info.failed, info.billable) == (4, 1, 3)
    assert ledger(con) == [(0, "ref0", "charge", 3), (0, "ref0", "release", 2)]
    assert con.execute("select credits_charged, credits_released from jobs").fetchone() == (3, 2)


def test_job_with_nothing_billable_writes_only_a_release(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """A charge of 0 is not written; the whole hold is released."""
    path = write_lines(tmp_path / "r.jsonl.gz", [enrich_line(k, success=False) for k in chunk])
    load(con, path)
    assert ledger(con) == [(0, "ref0", "release", 5)]


def test_sync_billing_charges_answered_rows_without_release(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A synchronous batch is charged per answered place (billable or not), never released."""
    add_run(con, "r1")
    places = keys(3)
    plan_chunk(con, "r1", 0, places, route="sync")
    lines = [
        enrich_line(places[0]),
        enrich_line(places[1], success=False),
        enrich_line(places[2], attributes={}, status=None, operational_status=None),
    ]
    info = load(con, write_lines(tmp_path / "r.jsonl.gz", lines), billing="sync", held=0)
    assert (info.charged, info.released, info.billable) == (2, 0, 1)
    assert ledger(con) == [(0, "ref0", "charge", 2)]


def test_sync_batch_that_failed_entirely_writes_no_ledger_rows(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """No answered place, no charge: the ledger gets nothing."""
    add_run(con, "r1")
    plan_chunk(con, "r1", 0, ["k"], route="sync")
    load(
        con,
        write_lines(tmp_path / "r.jsonl.gz", [enrich_line("k", success=False)]),
        billing="sync",
        held=0,
    )
    assert ledger(con) == []


def test_partial_file_of_a_cancelled_job(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """partial=True loads the processed prefix, releases the unprocessed hold and says so."""
    path = write_lines(tmp_path / "r.jsonl.gz", [enrich_line(k) for k in chunk[:2]])
    with pytest.raises(LoadError):
        load(con, path)
    info = load(con, path, partial=True)
    assert (info.rows, info.charged, info.released) == (2, 2, 3)
    job = con.execute("select rows_loaded, error from jobs").fetchone()
    assert job == (2, "partial result: 2 of 5 rows")


def test_a_file_must_hold_the_lines_its_job_reported(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """Given the line count the job reported, a file holding another count (here a cancelled
    job's prefix one line short of it) raises LoadError and writes nothing."""
    path = write_lines(tmp_path / "r.jsonl.gz", [enrich_line(k) for k in chunk[:2]])
    with pytest.raises(LoadError, match="the job says 3"):
        load(con, path, partial=True, lines=3)
    assert con.execute("select count(*) from enrichments").fetchone() == (0,)
    assert load(con, path, partial=True, lines=2).rows == 2


def test_tolerant_parsing(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """Unknown fields are ignored, unfamiliar enum values kept, missing attributes null."""
    add_run(con, "r1")
    places = keys(4)
    plan_chunk(con, "r1", 0, places, attributes=["phone", "website", "existence"])
    lines = [
        enrich_line(
            places[0],
            novel_field={"nested": [1, 2]},
            another=3,
            operational_status=operational("zombie", 0.4, "eaten"),
        ),
        enrich_line(
            places[1],
            attributes={
                "phone": attribute({"number": "+1"}, "very high"),
                "unheard_of": attribute({"x": 1}),
            },
        ),
        enrich_line(
            places[2],
            attributes={
                "phone": {"value": "+4930123", "confidence": "low", "status": "estimated"},
                "website": {"value": None, "confidence": None, "status": "cost_capped"},
                "email": {"value": {"email": "a@b.c"}, "as_of": "not a date", "confidence": "high"},
            },
        ),
        enrich_line(
            places[3],
            attributes=None,
            status=None,
            operational_status=None,
            enrichment_timestamp="yesterday-ish",
        ),
    ]
    load(con, write_lines(tmp_path / "r.jsonl.gz", lines))
    rows = con.execute(
        "select operational_status, closure_reason, phone_confidence, phone_number,"
        " phone_status, website_value, website_status, website_url, email_address,"
        " email_as_of, enriched_at, attributes_requested"
        " from enrichments order by position"
    ).fetchall()
    assert rows[0][:2] == ("zombie", "eaten")
    assert rows[1][2:5] == ("very high", "+1", None)
    assert rows[1][5] is None
    assert rows[2][2:10] == (
        "low",
        "+4930123",
        "estimated",
        None,
        "cost_capped",
        None,
        "a@b.c",
        None,
    )
    assert rows[3][:10] == (None,) * 10
    assert rows[3][10] is None
    assert {r[11] for r in rows} == {"phone,website,existence"}


def test_all_null_columns_keep_their_types(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """A file where every row lacks a field still loads typed (explicit columns, no guessing)."""
    add_run(con, "r1", "validate")
    places = keys(3)
    plan_chunk(con, "r1", 0, places, kind="validate")
    lines = [{"success": True, "id": k} for k in places]
    info = load(con, write_lines(tmp_path / "r.jsonl.gz", lines), kind="validate")
    assert (info.rows, info.billable) == (3, 0)
    row = con.execute(
        "select existence_confidence, operational_status, validated_at,"
        " typeof(existence_confidence) from validations limit 1"
    ).fetchone()
    assert row == (None, None, None, "DOUBLE")


def test_default_attributes_when_the_request_names_none(
    con: duckdb.DuckDBPyConnection, chunk: list[str], tmp_path: Path
) -> None:
    """attributes_requested falls back to the spec's default list."""
    load(con, write_lines(tmp_path / "r.jsonl.gz", [enrich_line(k) for k in chunk]))
    assert con.execute("select distinct attributes_requested from enrichments").fetchall() == [
        ("opening_hours,phone,website,existence,open_closed",)
    ]


class CountingConnection:
    """A connection that counts the statements sent through it (and passes them on)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.statements = 0

    def execute(self, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        self.statements += 1
        return self.con.execute(*args, **kwargs)


def test_ten_thousand_row_enrich_file_loads_in_as_many_statements_as_ten(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A full 10,000-row enrich chunk loads (typed, verified, billed) in the same statements as
    a 10-row one: DuckDB reads the file whole, nothing is done per row."""
    add_run(con, "r1")
    counts = []
    for chunk_no, size in enumerate((10, 10_000)):
        places = keys(size, prefix=f"c{chunk_no}-")
        plan_chunk(con, "r1", chunk_no, places)
        path = write_lines(tmp_path / f"r{chunk_no}.jsonl.gz", [enrich_line(k) for k in places])
        counting: Any = CountingConnection(con)  # stands in for the connection it wraps
        info = load_result(
            counting,
            run_id="r1",
            chunk_no=chunk_no,
            kind="enrich",
            path=path,
            billing="job",
            held=size,
            ref=f"job_r1_{chunk_no}",
        )
        assert info.rows == size
        counts.append(counting.statements)
    assert counts[0] == counts[1], counts


SANDBOX_CASES: dict[str, tuple[str, list[str] | None, str | None]] = {
    "enrich, every attribute": (
        "enrich",
        ["opening_hours", "phone", "website", "facebook", "instagram", "tiktok", "email"],
        None,
    ),
    "enrich, cells": ("enrich", ["phone", "email"], "cell"),
    "enrich, default attributes": ("enrich", None, None),
    "validate": ("validate", None, None),
}


@pytest.mark.parametrize("unknown", [False, True], ids=["spec-fields", "unknown-fields"])
@pytest.mark.parametrize("case", list(SANDBOX_CASES))
def test_sandbox_result_lines_bill_as_the_sandbox_does(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, case: str, unknown: bool
) -> None:
    """Realistic sandbox lines load whole, with the billable count the sandbox charges (also
    when they carry fields the spec never names: FaultConfig.unknown_fields)."""
    from placeflow.emulator.synth import SynthSettings, render_job_lines

    kind, attributes, response_format = SANDBOX_CASES[case]
    places = keys(500)
    extra: dict[str, Any] = {"attributes": attributes} if attributes else {}
    if response_format:
        extra["response_format"] = response_format
    pois = [
        {"id": k, "poi_name": f"Cafe {i}", "city": "Berlin", "country": "DE", **extra}
        for i, k in enumerate(places)
    ]
    body, tally = render_job_lines(
        kind,  # type: ignore[arg-type]  # a str parameter, the sandbox's Literal
        pois,
        settings=SynthSettings(unknown_fields=unknown),
        now="2026-11-01T12:00:00Z",
    )
    path = tmp_path / "result.jsonl.gz"
    path.write_bytes(gzip.compress(body))
    add_run(con, "r1", kind)
    plan_chunk(con, "r1", 0, places, kind=kind, attributes=attributes)
    info = load(con, path, kind=kind)
    assert (info.rows, info.succeeded, info.billable) == (
        tally.rows,
        tally.succeeded,
        tally.billable,
    )
    assert (info.charged, info.released) == (tally.billable, 500 - tally.billable)
