"""`placeflow research` as scripts call it: the argument form, exit codes, one JSON line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placeflow.research_cli import main

from .conftest import KEY, SCALE, ServeSandbox, places, write_csv


def test_bad_field_spec_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A field outside the spec's limits exits 2 with the reason, before any request."""
    csv = write_csv(tmp_path / "p.csv", places(2))
    assert main(["research", str(csv), "--field", "x:colour", "--db", str(tmp_path / "d")]) == 2
    assert "not one of" in capsys.readouterr().err


def test_cli_form_runs_and_prints_one_json_summary(
    tmp_path: Path,
    serve: ServeSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """research INPUT --field ... --describe ... --verify-identity --max-credits --json: exit 0,
    one JSON summary whose charge is the sandbox's."""
    sb = serve(fail_rate=0.0)
    monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
    monkeypatch.setenv("PLACEFLOW_BASE_URL", sb.base_url)
    monkeypatch.setenv("PLACEFLOW_RATE_LIMITS", f"10/{SCALE:g}s,100/{60 * SCALE:g}s")
    csv = write_csv(tmp_path / "p.csv", places(12))
    argv = ["research", str(csv), "--field", "price:enum:$|$$", "--field", "vegan:bool",
            "--describe", 'vegan="Has vegan dishes"', "--verify-identity",
            "--max-credits", "36", "--db", str(tmp_path / "wh.duckdb"), "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["charged"] == 36 == sb.credits()["charged"] and out["status"] == "completed"
