"""Each check of sql/checks/ passes on consistent data and catches the break it is named for."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from placeflow.state.checks import check_names, check_rows, run_checks
from placeflow.store.warehouse import connect
from tests.warehouse.dataset import build_clean

BREAKS: dict[str, list[str]] = {
    "run_rows_count_mismatch": ["update runs set rows_read = 7 where run_id = 'r1'"],
    "disposition_count_mismatch": ["update runs set duplicates = 0 where run_id = 'r1'"],
    "submitted_place_not_planned": [
        "insert into run_rows (run_id, row_ord, source_file, source_row, source_id, place_key,"
        " disposition, note) values ('r1', 6, 'in.csv', 7, null, 'Q', 'submitted', null)"
    ],
    "planned_place_not_submitted": [
        "update run_rows set disposition = 'duplicate' where run_id = 'r1' and place_key = 'C'"
    ],
    "rejected_row_without_reject": ["delete from rejects where run_id = 'r1'"],
    "double_outcomes": [
        "insert into validations by name select run_id, place_key, chunk_no, position,"
        " success, billable, loaded_at from enrichments where place_key = 'A'"
    ],
    "outcome_mode_mismatch": ["update runs set mode = 'enrich' where run_id = 'r2'"],
    "outcome_not_planned": [
        "update enrichments set position = 1 where run_id = 'r1' and place_key = 'A'"
    ],
    "completed_run_missing_outcomes": [
        "delete from enrichments where run_id = 'r1' and place_key = 'C'"
    ],
    "completed_run_with_open_chunks": [
        "update jobs set status = 'completed' where run_id = 'r1' and chunk_no = 1"
    ],
    "chunk_rows_mismatch": ["update jobs set rows = 3 where run_id = 'r1' and chunk_no = 0"],
    "loaded_chunk_outcome_count_mismatch": [
        "update jobs set rows_loaded = 1 where run_id = 'r1' and chunk_no = 0"
    ],
    "job_hold_not_settled": ["delete from credit_ledger where run_id = 'r1' and kind = 'release'"],
    "job_credits_ledger_mismatch": [
        "update jobs set credits_charged = 9 where run_id = 'r1' and chunk_no = 0"
    ],
    "ledger_double_charge": [
        "insert into credit_ledger select * from credit_ledger"
        " where run_id = 'r1' and kind = 'charge' and chunk_no = 1"
    ],
    "run_outcome_count_mismatch": ["update runs set succeeded = 3 where run_id = 'r1'"],
    "usage_delta_unexplained": ["update runs set usage_after = 1009 where run_id = 'r1'"],
    "run_places_duplicate": [
        "insert into run_places select * from run_places where run_id = 'r1' and place_key = 'A'"
    ],
    "request_id_mismatch": [
        "update run_places set request = '{\"id\":\"other\"}' where place_key = 'A'"
    ],
}


@pytest.fixture(scope="module")
def clean_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = connect(":memory:")
    build_clean(connection, tmp_path_factory.mktemp("clean"))
    yield connection
    connection.close()


@pytest.fixture
def clean(clean_db: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """The clean dataset; whatever a test breaks is rolled back after it."""
    clean_db.execute("begin transaction")
    yield clean_db
    clean_db.execute("rollback")


def test_every_check_has_a_break_case() -> None:
    """The checks in sql/checks/ and the cases below are the same set."""
    assert set(check_names()) == set(BREAKS)


def test_clean_data_passes_every_check(clean: duckdb.DuckDBPyConnection) -> None:
    """A consistent warehouse returns zero rows from every check."""
    assert run_checks(clean) == dict.fromkeys(check_names(), 0)


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_check_catches_its_break(clean: duckdb.DuckDBPyConnection, name: str) -> None:
    """Breaking the data on purpose makes the check named for it return rows."""
    for statement in BREAKS[name]:
        clean.execute(statement)
    assert check_rows(clean, name) > 0


def test_checks_filter_by_run(clean: duckdb.DuckDBPyConnection) -> None:
    """run_checks(run_id) counts only that run's problems."""
    clean.execute("update runs set succeeded = 5 where run_id = 'r2'")
    assert run_checks(clean, "r2")["run_outcome_count_mismatch"] == 1
    assert run_checks(clean, "r1") == dict.fromkeys(check_names(), 0)
    assert run_checks(clean)["run_outcome_count_mismatch"] == 1


def test_a_research_runs_planned_places_are_not_chunks_without_jobs(
    clean: duckdb.DuckDBPyConnection,
) -> None:
    """A research run keeps its rows and planned places in run_rows and run_places, and its
    requests in research_requests, never in jobs: every check still passes; the same places
    under a run that is not research's are a chunk without a jobs row."""
    clean.execute(
        "insert into runs (run_id, created_at, status, mode, signature, fields, verify_identity,"
        " validate_existence, fingerprint, rows_read, submitted, succeeded) values"
        " ('rr_1', now(), 'completed', 'research', 'research|x|', 'cuisine', false, false, 'f',"
        " 1, 1, 1)"
    )
    clean.execute(
        "insert into run_places (run_id, place_key, chunk_no, position, request)"
        " values ('rr_1', 'A', 0, 0, '{\"id\":\"A\"}')"
    )
    clean.execute(
        "insert into run_rows (run_id, row_ord, source_file, source_row, place_key, disposition)"
        " values ('rr_1', 0, 'in.csv', 1, 'A', 'submitted')"
    )
    assert {name: n for name, n in run_checks(clean).items() if n} == {}
    clean.execute("update run_places set run_id = 'r9' where run_id = 'rr_1'")
    assert check_rows(clean, "chunk_rows_mismatch") == 1


def test_a_timed_out_sync_failure_is_not_an_open_chunk(clean: duckdb.DuckDBPyConnection) -> None:
    """Chunks that ended without results (failed, timed out) do not keep a run open."""
    clean.execute("update jobs set status = 'timed_out' where run_id = 'r1' and chunk_no = 1")
    assert run_checks(clean)["completed_run_with_open_chunks"] == 0


def test_unanswered_places_of_failed_chunks_are_not_missing(
    clean: duckdb.DuckDBPyConnection,
) -> None:
    """Places of a failed chunk, or past a partial file's end, are known unanswered, not lost."""
    clean.execute("delete from enrichments where run_id = 'r1' and chunk_no = 1")
    clean.execute("update jobs set status = 'failed' where run_id = 'r1' and chunk_no = 1")
    assert check_rows(clean, "completed_run_missing_outcomes") == 0
    clean.execute("delete from validations where run_id = 'r2' and place_key = 'E'")
    clean.execute(
        "update jobs set rows_loaded = 1, error = 'partial result: 1 of 2 rows' where run_id = 'r2'"
    )
    assert check_rows(clean, "completed_run_missing_outcomes") == 0


def test_a_place_answered_twice_in_one_table_is_a_double_outcome(
    clean: duckdb.DuckDBPyConnection,
) -> None:
    """The outcome tables carry no unique index: the check is what catches a repeated row."""
    clean.execute("insert into enrichments select * from enrichments where place_key = 'A'")
    assert check_rows(clean, "double_outcomes") == 1
