"""Submitting beside fetching: a run fetches the jobs that ended while later chunks are still
being sent, and loads them in batches (the poller's side: tests/api/test_poller_feed.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

import placeflow
from placeflow.options import RunOptions
from tests.sandbox_target import served
from tests.test_run import write_places

KEY = "sk_overlap_paid_key_0001"
WAIT = 60.0
"""Bound on waiting for the other thread (an event, not a timing): reached only on a failure."""


def test_a_finished_job_is_fetched_before_the_last_chunk_is_sent(tmp_path: Path) -> None:
    """The last chunk's POST waits until the first chunk's file is fetched and verified: with
    submit before polling this would never happen; the sandbox served the first result before
    it saw the last POST, and every chunk is loaded and paid once."""
    first_loaded = threading.Event()
    seen_at_last_post: dict[str, Any] = {}
    submits = 0

    with served(KEY, rows_per_second=None) as (sandbox, target):

        def step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                nonlocal submits
                if name == "submit":
                    submits += 1
                    if submits == 3:  # the last chunk: only once a result is in
                        seen_at_last_post["loaded"] = first_loaded.wait(WAIT)
                        seen_at_last_post["stats"] = sandbox.stats()
                result = fn(*args, **kwargs)
                if name == "fetch":
                    first_loaded.set()
                return result

            return call

        summary = placeflow.run(
            [str(write_places(tmp_path / "p.csv", 30))],
            options=RunOptions(route="job", chunk_rows=10, force=True),
            db=tmp_path / "wh.duckdb", target=target, step=step,
        )  # fmt: skip
        after = sandbox.stats()

    assert seen_at_last_post["loaded"], "no chunk was fetched while chunks were being sent"
    before = seen_at_last_post["stats"]
    assert sum(before["requests"]["POST /v1/jobs/enrich"].values()) == 2
    assert before["downloads"]["served"] >= 1  # a result file left before the last POST came
    assert summary.status == "completed" and summary.succeeded + summary.failed == 30
    assert after["jobs"]["created"] == 3 and after["duplicate_submissions"] == 0
    assert after["keys"][KEY]["credits"]["charged"] == summary.succeeded
    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        loaded = con.execute("select count(*) from jobs where status = 'loaded'").fetchone()
    assert loaded == (3,)
