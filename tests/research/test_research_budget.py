"""A research counts against the warehouse's budgets: priced (`--estimate`) and refused (exit
3, nothing sent to the sandbox) past what a research budget leaves, spent within it otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placeflow.cli.main import main

from .conftest import KEY, SCALE, ServeSandbox
from .test_from_warehouse import loaded_warehouse

pytestmark = pytest.mark.slow  # a run and two research invocations over loopback


def test_research_from_the_warehouse_is_priced_and_held_to_its_budget(
    tmp_path: Path,
    serve: ServeSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With 5 credits a day for research, researching 8 places one field each is priced as
    refused and refused (exit 3, no place billed by the sandbox); with 10 it completes and the
    budget is left 10 minus what the sandbox billed."""
    sb = serve(fail_rate=0.0)
    db, _ = loaded_warehouse(tmp_path, sb, 8)
    monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
    monkeypatch.setenv("PLACEFLOW_BASE_URL", sb.base_url)
    monkeypatch.setenv("PLACEFLOW_RATE_LIMITS", f"10/{SCALE:g}s,100/{60 * SCALE:g}s")
    budget = ["budget", "set", "--per", "day", "--for", "research", "--db", str(db)]
    assert main([*budget, "--credits", "5"]) == 0
    research = ["research", "--from-warehouse", "--older-than", "0", "--field", "vegan:bool",
                "--db", str(db), "--json"]  # fmt: skip
    capsys.readouterr()
    assert main([*research, "--estimate"]) == 3
    priced = json.loads(capsys.readouterr().out)
    assert priced["status"] == "refused" and "day budget" in priced["message"]
    assert main(research) == 3
    refused = json.loads(capsys.readouterr().out)
    assert refused["status"] == "refused" and sb.research()["billed_places"] == 0
    assert main([*budget, "--credits", "10"]) == 0
    capsys.readouterr()
    assert main(research) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["status"] == "completed" and sb.research()["billed_places"] == 8
    assert main(["budget", "--db", str(db), "--json"]) == 0
    (day,) = json.loads(capsys.readouterr().out)["budgets"]
    assert day["for"] == "research" and day["left"] == 10 - done["charged"]
    assert done["budget_warnings"], "8 of 10 is past the 80% warning"
