"""A file's phone column is read for the fuzzy dedupe and never sent: the same restaurant as
two guides list it (one says the city is "new york", the other "new york city") is one place
to the sandbox when both rows carry its phone number, two when the file has no phone column."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator.backend import SandboxBackend
from placeflow.options import RunOptions
from tests.sandbox_target import served as served_sandbox

KEY = "sk_phone_dedupe_paid_key_1234"
ROWS = [  # the two guides' ids in one file: its runs say so (ids_may_repeat_places)
    ("f1", "aquavit", "13 w. 54th st.", "new york", "US", "212/307-7311"),
    ("z1", "aquavit", "13 w. 54th st.", "new york city", "US", "212-307-7311"),
    ("f2", "le bernardin", "155 w. 51st st.", "new york", "US", "212/489-1515"),
]
"""Two listings of one restaurant (fodors' and zagat's spellings), and another restaurant."""


def _write(path: Path, *, phone: bool) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "addr", "city", "country", *(["phone"] if phone else [])])
        writer.writerows(row if phone else row[:5] for row in ROWS)
    return path


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, phone: bool) -> dict[str, Any]:
    """The run of the file, what the sandbox was sent (each job's body, as it parsed it) and
    charged, and the requests the run recorded."""
    bodies: list[dict[str, Any]] = []
    submit = SandboxBackend.submit_job

    def recorded(self: SandboxBackend, state: Any, kind: Any, raw: bytes, idem: Any) -> Any:
        bodies.append(json.loads(raw))
        return submit(self, state, kind, raw, idem)

    monkeypatch.setattr(SandboxBackend, "submit_job", recorded)
    db = tmp_path / f"phone-{phone}.duckdb"
    path = _write(tmp_path / f"guides-{phone}.csv", phone=phone)
    with served_sandbox(KEY) as (sandbox, target):
        summary = placeflow.run(
            [str(path)],
            options=RunOptions(route="job", dedupe="fuzzy", ids_may_repeat_places=True),
            db=db,
            target=target,
        )
        charged = sandbox.stats()["keys"][KEY]["credits"]["charged"]
    with duckdb.connect(str(db), read_only=True) as con:
        stored = [r[0] for r in con.execute("select request from run_places").fetchall()]
    sent = [poi for body in bodies for poi in body["pois"]]
    return {"summary": summary, "sent": sent, "charged": charged, "stored": stored}


def test_a_shared_phone_number_merges_two_listings_and_is_never_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _run(tmp_path, monkeypatch, phone=True)
    summary = seen["summary"]
    assert summary.status == "completed" and summary.rows_read == 3
    assert (summary.duplicates, summary.fuzzy_duplicates) == (1, 1)
    names = sorted((p["poi_name"], p["city"]) for p in seen["sent"])
    assert names == [("aquavit", "new york"), ("le bernardin", "new york")]  # the first listing
    assert not any({"phone", "website"} & set(p) for p in seen["sent"]), "never sent"
    stored = [json.loads(r) for r in seen["stored"]]
    assert len(stored) == 2 and not any("307" in str(v) for r in stored for v in r.values())
    assert seen["charged"] == summary.charged == summary.succeeded <= 2


def test_without_a_phone_column_the_two_listings_stay_two_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _run(tmp_path, monkeypatch, phone=False)
    assert seen["summary"].duplicates == 0
    assert sorted(p["city"] for p in seen["sent"]) == ["new york", "new york", "new york city"]
