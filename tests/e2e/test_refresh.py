"""`placeflow refresh` end to end: the README's main job (the sample restaurants) loaded from a
sandbox at epoch 0, then re-checked against a sandbox served on loopback at epoch 1."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.fields import RateLimits
from placeflow.pipeline.account import RunSummary
from placeflow.runner.refresh import refresh, select_stale
from placeflow.runner.target import Target
from placeflow.state.runstate import utc_now
from placeflow.support.redact import Secret
from tests.warehouse.sandbox_runs import SAMPLES, changed_fields

from .conftest import KEY, Served, ServeSandbox

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

SIGNATURE = placeflow.RunOptions().signature
"""The main job's and the refresh's: enrich with the default attributes."""


def target_of(served: Served) -> Target:
    return Target(
        base_url=served.base_url,
        api_key=Secret(KEY),
        label=f"sandbox at {served.base_url}",
        limits=RateLimits.for_tier("paid"),
    )


def requests_of(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, str]:
    rows = con.execute("select place_key, request from run_places where run_id = ?", [run_id])
    return {str(k): str(r) for k, r in rows.fetchall()}


@dataclass
class Built:
    db: Path
    copy: Path
    main: RunSummary


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, serve_sandbox_module: ServeSandbox) -> Built:
    """The README's main job, `placeflow run data/samples/*.csv`, at epoch 0; and a copy."""
    work = tmp_path_factory.mktemp("refresh")
    db = work / "wh.duckdb"
    served = serve_sandbox_module(epoch=0)
    main = placeflow.run([str(p) for p in SAMPLES], db=db, target=target_of(served))
    assert main.status == "completed" and main.submitted > 500
    copy = work / "copy" / "wh.duckdb"
    copy.parent.mkdir()
    shutil.copy(db, copy)
    return Built(db, copy, main)


def sandbox_counts(served: Served) -> tuple[int, dict[str, Any]]:
    return served.credits()["charged"], served.stats()["requests"]


@pytest.mark.usefixtures("prefect_api")  # the second refresh goes through the CLI's flow
def test_refresh_rechecks_every_place_and_records_exactly_the_sandbox_changes(
    built: Built, serve_sandbox: ServeSandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """--older-than 0 sends every place once with its stored request, charges what the
    sandbox billed, and place_changes is the sandbox's own changes (precision, recall 1.0);
    a second refresh with --older-than 1d sends nothing and charges 0."""
    served = serve_sandbox(epoch=1)
    s = refresh(db=built.db, older_than="0", mode="enrich", target=target_of(served))
    assert s.status == "completed"
    charged, requests = sandbox_counts(served)
    assert requests["POST /v1/jobs/enrich"] == {"200": 1}
    ledger = served.sandbox.backend.ledger()
    (billed,) = ledger.values()
    assert billed["rows_billed_twice"] == {}
    assert s.charged == charged == billed["rows_billed"] == s.usage_delta == s.succeeded
    assert s.ledger_vs_usage == 0
    with duckdb.connect(str(built.db), read_only=True) as con:
        sent = requests_of(con, s.run_id)
        assert sent == requests_of(con, built.main.run_id)  # same keys, byte-identical requests
        found = {
            (str(k), str(f))
            for k, f in con.execute(
                "select place_key, field from place_changes where run_id = ?", [s.run_id]
            ).fetchall()
        }
        kinds = dict(
            con.execute(
                "select kind, count(*) from place_changes where run_id = ? group by kind",
                [s.run_id],
            ).fetchall()
        )
    truth = changed_fields({k: json.loads(r) for k, r in sent.items()})
    assert truth and found == truth
    assert s.changes == kinds and sum(kinds.values()) == len(truth)
    assert s.places_changed == len({k for k, _ in truth})
    assert s.changed_per_credit == round(s.places_changed / s.charged, 4)

    from placeflow.cli.main import main

    assert main(["refresh", "--db", str(built.db), "--older-than", "1d", "--json"]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (again["submitted"], again["charged"], again["changes"]) == (0, 0, {})
    assert sandbox_counts(served) == (charged, requests)  # the sandbox saw no new request


def test_a_budget_takes_the_most_likely_changed_first(
    built: Built, serve_sandbox: ServeSandbox
) -> None:
    """With --max-credits below the stale set's cost the refresh does not refuse: it spends at
    most the budget on the highest-priority places (never answered first) and reports the
    changes found per credit."""
    served = serve_sandbox(epoch=1)
    budget = 60
    with duckdb.connect(str(built.copy), read_only=True) as con:
        ranked = select_stale(
            con, older_than=timedelta(0), mode="enrich", signature=SIGNATURE, now=utc_now()
        )
    assert ranked.height > budget
    s = refresh(db=built.copy, older_than="0", max_credits=budget, target=target_of(served))
    assert s.status == "completed"
    assert s.held <= budget and s.charged <= budget and served.credits()["charged"] <= budget
    assert s.submitted == budget  # the sandbox's rate card: 1 credit a place
    left = ranked.height - budget
    assert s.inputs["warnings"] == [
        f"{left:,} of {ranked.height:,} stale places are left for a later refresh"
        f" (--max-credits {budget} buys {budget}; the places most likely to have changed went"
        " first)"
    ]
    with duckdb.connect(str(built.copy), read_only=True) as con:
        sent = set(requests_of(con, s.run_id))
    by_key = dict(zip(ranked["place_key"], ranked["priority"], strict=True))
    lowest_sent = min(by_key[k] for k in sent)
    highest_left = max(p for k, p in by_key.items() if k not in sent)
    assert lowest_sent >= highest_left
    never_answered = set(ranked.filter(ranked["answered_at"].is_null())["place_key"])
    assert never_answered and never_answered <= sent
    assert s.changed_per_credit == (round(s.places_changed / s.charged, 4) if s.charged else None)
