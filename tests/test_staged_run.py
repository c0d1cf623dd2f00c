"""A run read, normalised and planned a batch at a time (`batch_rows`) is the run done in one
batch: the same rows recorded, the same requests sent in the same chunks (as the sandbox saw
them), each chunk's recorded sha256 that of the body sent."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb

import placeflow
from placeflow.options import RunOptions
from placeflow.state.runstate import RunState
from tests.sandbox_target import served

KEY = "sk_staged_paid_key_1234"
TABLES = {
    "run_rows": "select * exclude (run_id) from run_rows order by row_ord",
    "rejects": "select * exclude (run_id) from rejects order by row_ord",
    "run_places": "select * exclude (run_id) from run_places order by chunk_no, position",
    "jobs": "select chunk_no, route, kind, rows, content_sha256, status, rows_loaded"
    " from jobs order by chunk_no",
}


def write_inputs(path: Path) -> Path:
    """60 places, 12 repeats of earlier ones (some far apart), 5 rows without a name, and
    places with their coordinates, in an order that crosses every batch boundary."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "name", "address", "city", "country", "lat", "lon"])
        for i in range(60):
            name = "" if i % 13 == 5 else f"Corner Shop {i}"
            writer.writerow([f"u{i}", name, f"{i} Elm Street", "Springfield", "USA", "", ""])
            if i % 5 == 4:  # a repeat of an earlier place (its id too: the same record twice)
                j = i // 2
                writer.writerow([f"u{j}", f"Corner Shop {j}", f"{j} Elm Street", "Springfield",
                                 "USA", "", ""])  # fmt: skip
        writer.writerow(["g1", "Harbour Cafe", "1 Quay", "Oslo", "Norway", "59.91", "10.75"])
    return path


def run_with(batch_rows: int, inputs: Path, db: Path) -> dict[str, Any]:
    with served(KEY) as (sandbox, target):
        summary = placeflow.run(
            [str(inputs)],
            options=RunOptions(route="job", chunk_rows=8, dedupe="exact", batch_rows=batch_rows),
            db=db,
            target=target,
        )
        # what the sandbox received, in order: each job's digest of the places it parsed, and
        # its rows' ids
        sent = [(job.content_hash, job.row_ids) for job in sandbox.backend.jobs.values()]
    with duckdb.connect(str(db)) as con:
        tables = {name: con.execute(sql).fetchall() for name, sql in TABLES.items()}
        state = RunState(con, summary.run_id)
        bodies = [state.chunk_body(c.chunk_no) for c in state.chunks()]
    return {"summary": summary, "sent": sent, "tables": tables, "bodies": bodies}


def test_a_run_in_batches_of_seven_rows_is_the_run_in_one_batch(tmp_path: Path) -> None:
    """Batches of 7 rows (duplicates, rejects and chunks of 8 all crossing batch boundaries)
    record the same run_rows, rejects, run_places and jobs as one batch, and the sandbox
    received the same places in the same jobs; each job's content_sha256 is the sha256 of the
    body assembled from run_places, whose places are those the sandbox received."""
    inputs = write_inputs(tmp_path / "places.csv")
    small = run_with(7, inputs, tmp_path / "small.duckdb")
    whole = run_with(1_000_000, inputs, tmp_path / "whole.duckdb")
    assert small["summary"].status == whole["summary"].status == "completed"
    assert small["tables"] == whole["tables"]
    assert small["sent"] == whole["sent"]
    jobs = small["tables"]["jobs"]
    rows = small["tables"]["run_rows"]
    dispositions = [r[5] for r in rows]
    assert dispositions.count("rejected") == 5 and dispositions.count("duplicate") == 12
    submitted = dispositions.count("submitted")
    assert len(jobs) == -(-submitted // 8) == len(small["sent"])
    assert sum(len(ids) for _, ids in small["sent"]) == submitted
    for job, body, (_, ids) in zip(jobs, small["bodies"], small["sent"], strict=True):
        assert hashlib.sha256(body).hexdigest() == job[4]
        assert [f"enrich:{p['id']}" for p in json.loads(body)["pois"]] == ids  # the default mode
