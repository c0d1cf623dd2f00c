"""Runs of the sample places against a sandbox served on loopback, through `placeflow.run`.

`run_places` is one whole run of the library's entry point (no Prefect, no order of its own):
the sample files (or a head of them) against a sandbox at a given epoch, recorded in a
warehouse file as of an injected clock. `sandbox_answer` is the sandbox's own ground truth for a
request (emulator/synth.py) and `changed_fields` what it changed between two epochs, to compare
the warehouse with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

import placeflow
from placeflow.emulator import DEFAULT_API_KEY, Sandbox, SandboxConfig
from placeflow.emulator.synth import SynthSettings, enrich_outcome, validate_outcome
from placeflow.fields import JobKind
from placeflow.options import RunOptions
from tests.sandbox_target import sandbox_target

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "data" / "samples").glob("*.csv"))
STAMP = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class Runs:
    """A warehouse file's connection, opened once its runs are done, and their ids by label."""

    con: duckdb.DuckDBPyConnection
    ids: dict[str, str]


def sample_head(path: Path, rows: int) -> Path:
    """The first `rows` records of the first sample file, written to `path` (a smaller input)."""
    lines = SAMPLES[0].read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: rows + 1]), encoding="utf-8")
    return path


def run_places(
    db: Path,
    *,
    epoch: int,
    now: datetime,
    mode: JobKind = "enrich",
    inputs: Sequence[Path] = tuple(SAMPLES),
    fail_rate: float = 0.01,
) -> str:
    """One completed `placeflow.run` of `inputs` into `db` against a sandbox at `epoch`, its
    clock standing at `now`: every place sent again (force) in one bulk job; returns run_id."""
    sandbox = Sandbox(SandboxConfig(epoch=epoch, fail_rate=fail_rate))
    options = RunOptions(mode=mode, force=True, dedupe="exact", route="job")
    with sandbox.serve() as served:
        target = sandbox_target(served.base_url, DEFAULT_API_KEY)
        summary = placeflow.run(
            [str(p) for p in inputs], options=options, db=db, target=target, clock=lambda: now
        )
    assert summary.status == "completed", summary.message
    stats = sandbox.stats()
    assert stats["requests"][f"POST /v1/jobs/{mode}"] == {"200": 1}
    assert summary.charged == stats["keys"][DEFAULT_API_KEY]["credits"]["charged"]
    return summary.run_id


def sent_requests(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, dict[str, Any]]:
    """The exact requests a run sent, by place_key."""
    rows = con.execute(
        "select place_key, request from run_places where run_id = ?", [run_id]
    ).fetchall()
    return {str(k): json.loads(r) for k, r in rows}


def sandbox_answer(
    request: Mapping[str, Any], *, mode: str, epoch: int, fail_rate: float = 0.01
) -> dict[str, Any]:
    """What the sandbox answers for a request at an epoch (its own synthesis)."""
    settings = SynthSettings(epoch=epoch, fail_rate=fail_rate)
    if mode == "validate":
        return validate_outcome(dict(request), settings=settings, now=STAMP)
    return enrich_outcome(dict(request), settings=settings, now=STAMP)


# --- what the sandbox changed between two epochs ------------------------------------------------


def _digits(value: str | None) -> str | None:
    return re.sub(r"\D", "", value) or None if value else None


def _site(value: str | None) -> str | None:
    if not value:
        return None
    text = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.strip().lower())
    return re.sub(r"^www\.", "", text).split("?")[0].split("#")[0].rstrip("/") or None


def _band(confidence: float | None) -> str | None:
    return None if confidence is None else "likely" if confidence >= 0.5 else "unlikely"


def answer_fields(answer: Mapping[str, Any]) -> dict[str, Any]:
    """An enrich answer's compared fields, as the sandbox gave them (noise rules applied)."""
    attributes = answer["attributes"]

    def value(name: str) -> Any:
        return attributes[name]["value"]

    op = answer["operational_status"]
    return {
        "operational_status": op["status"],
        "closure_reason": (op["status"], op["closure_reason"]),
        "existence": _band(answer["status"]["existence_confidence"]),
        "opening_hours": json.dumps(value("opening_hours"), sort_keys=True),
        "phone": _digits((value("phone") or {}).get("number")),
        "website": _site((value("website") or {}).get("url")),
    }


def changed_fields(requests: Mapping[str, Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(place_key, field) the sandbox itself changed between epoch 0 and 1 for these enrich
    requests, of places it answered both times (a failed answer is no change)."""
    changed = set()
    for key, request in requests.items():
        before = sandbox_answer(request, mode="enrich", epoch=0)
        after = sandbox_answer(request, mode="enrich", epoch=1)
        if not (before["success"] and after["success"]):
            continue
        old, new = answer_fields(before), answer_fields(after)
        for name in old:
            if name == "closure_reason":
                both_closed = old[name][0] == new[name][0] == "closed"
                if both_closed and old[name][1] != new[name][1]:
                    changed.add((key, name))
            elif old[name] != new[name]:
                changed.add((key, name))
    return changed
