"""`placeflow.run` / `resume` without Prefect: every stage through the step, real counts as
events, the errors of the one tree, against a sandbox served on loopback."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import Sandbox
from placeflow.errors import BudgetRefused, UnknownRun, UsageError
from placeflow.events import Event, JobProgress, RowsLoaded, StageFinished
from placeflow.options import RunOptions
from placeflow.runner.target import Target
from placeflow.state.checks import run_checks
from tests.sandbox_target import served as served_sandbox

KEY = "sk_run_paid_key_1234"


@pytest.fixture
def served() -> Iterator[tuple[Sandbox, Target]]:
    with served_sandbox(KEY) as pair:
        yield pair


def write_places(path: Path, n: int, duplicates: int = 0) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "name", "address", "city", "country"])
        for i in list(range(n)) + list(range(duplicates)):
            writer.writerow([f"u{i}", f"Corner Shop {i}", f"{i} Elm Street", "Springfield", "USA"])
    return path


def test_every_stage_goes_through_the_step_and_reports_real_counts(
    served: tuple[Sandbox, Target], tmp_path: Path
) -> None:
    """A job run calls each stage through `step` in the data's order (load once per batch of
    fetched files, each chunk's info kept); events carry the counts the sandbox and the
    warehouse agree with."""
    sandbox, target = served
    calls: list[str] = []
    events: list[Event] = []

    def step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        calls.append(name)
        return fn

    csv_path = write_places(tmp_path / "p.csv", 30, duplicates=5)
    summary = placeflow.run(
        [str(csv_path)], options=RunOptions(route="job", chunk_rows=10, force=True),
        db=tmp_path / "wh.duckdb", target=target, step=step, on_event=events.append,
    )  # fmt: skip
    assert summary.status == "completed" and summary.submitted == 30
    first = list(dict.fromkeys(calls))
    assert first == [
        "read", "normalize", "dedupe", "fresh", "plan", "budget", "open", "submit", "poll",
        "fetch", "load", "account",
    ]  # fmt: skip
    assert calls.count("submit") == 3 and 1 <= calls.count("load") <= 3
    assert len(summary.stages["load"]) == 3
    finished = {e.stage: e.counts for e in events if isinstance(e, StageFinished)}
    assert finished["read"]["rows"] == 35 and finished["dedupe"]["duplicates"] == 5
    assert finished["plan"] == {"places": 30, "chunks": 3}
    assert sum(e.rows for e in events if isinstance(e, RowsLoaded)) == 30
    assert any(isinstance(e, JobProgress) for e in events)
    assert set(summary.stages) >= {"read", "normalize", "dedupe", "fresh", "plan", "load"}
    stats = sandbox.stats()
    assert stats["jobs"]["created"] == 3
    assert summary.charged == stats["keys"][KEY]["credits"]["charged"]
    with duckdb.connect(str(tmp_path / "wh.duckdb")) as con:
        assert all(n == 0 for n in run_checks(con).values()), run_checks(con)


def test_refusal_and_unknown_run_are_errors_of_the_tree(
    served: tuple[Sandbox, Target], tmp_path: Path
) -> None:
    """Over --max-credits: BudgetRefused with the recorded summary, nothing sent; resuming an
    unknown run: UnknownRun, a usage error that is also a LookupError."""
    sandbox, target = served
    csv_path = write_places(tmp_path / "p.csv", 12)
    with pytest.raises(BudgetRefused) as refused:
        placeflow.run(
            [str(csv_path)], options=RunOptions(max_credits=5, force=True),
            db=tmp_path / "wh.duckdb", target=target,
        )  # fmt: skip
    assert refused.value.summary is not None and refused.value.summary.status == "refused"
    assert sandbox.stats()["requests"].get("POST /v1/enrich-batch") is None
    with pytest.raises(UnknownRun) as unknown:
        placeflow.resume("run_nope", db=tmp_path / "wh.duckdb", target=target)
    assert isinstance(unknown.value, UsageError) and isinstance(unknown.value, LookupError)
