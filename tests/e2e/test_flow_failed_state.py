"""A flow run that does not end well, called as a worker's engine calls it (its result, not its
state): Prefect raises the run's own FailedResult, never `TypeError: Unexpected result for
failed state` with the summary dict (issue 48)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from placeflow.errors import EXIT_ALL_REJECTED, FailedResult
from tests.e2e.conftest import ServeSandbox

pytestmark = pytest.mark.slow  # Prefect's test server


@pytest.mark.usefixtures("prefect_api")
def test_a_failed_flow_run_raises_its_summary_not_a_type_error(
    serve_sandbox: ServeSandbox, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """run_files of a file whose every row is rejected ends Failed (exit 6); asked for its
    result, it raises FailedResult with the run's message, readable as its summary; nothing
    logged names a TypeError or the dict."""
    from placeflow.flows.run import run_files

    serve_sandbox()
    bad = tmp_path / "semi.csv"
    bad.write_text("name;city\nA;B;C\n", encoding="utf-8")
    with caplog.at_level(logging.INFO), pytest.raises(FailedResult) as raised:
        run_files(inputs=[str(bad)], db=str(tmp_path / "w.duckdb"))
    found = raised.value
    assert found["status"] == "all_rejected" and found["exit_code"] == EXIT_ALL_REJECTED
    assert "every one of the 1 input rows was rejected" in str(found)
    logged = caplog.text
    assert "TypeError" not in logged and "Unexpected result" not in logged
