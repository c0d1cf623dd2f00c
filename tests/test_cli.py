"""The CLI's commands that need no Prefect: estimate, runs, and its argument errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placeflow.cli.main import main


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLACEFLOW_API_KEY", raising=False)
    monkeypatch.delenv("PLACEFLOW_BASE_URL", raising=False)


SAMPLES = str(Path(__file__).resolve().parents[1] / "data" / "samples" / "*.csv")


def test_estimate_counts_and_costs_without_spending(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`estimate` on the samples: 864 rows, 98 duplicates (30 exact, 68 fuzzy, the guides'
    phone numbers among the evidence; none within one guide, whose ids differ, nor of two
    phones), 766 places."""
    code = main(["estimate", SAMPLES, "--db", str(tmp_path / "none.duckdb"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (out["rows_read"], out["duplicates"], out["to_send"]) == (864, 98, 766)
    assert out["credits_at_most"] == 766 and out["route"] == "job"
    assert not (tmp_path / "none.duckdb").exists(), "estimate creates nothing"


def test_runs_without_a_database(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`runs` on a missing database says there are no runs yet."""
    assert main(["runs", "--db", str(tmp_path / "none.duckdb")]) == 0
    assert "no runs yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["estimate", "nothing-here-*.csv"], "no such file"),
        (["estimate", SAMPLES, "--map", "colour=x"], "--map field"),
        (["estimate", SAMPLES, "--attributes", "fax"], "unknown attribute"),
        (["estimate", SAMPLES, "--mode", "validate", "--attributes", "phone"], "enrich only"),
    ],
)
def test_bad_arguments_are_exit_code_2_with_a_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Bad arguments or inputs end with exit code 2 and a one-line reason, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_key_without_a_base_url_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PLACEFLOW_API_KEY without PLACEFLOW_BASE_URL is a usage error; the key is not echoed."""
    monkeypatch.setenv("PLACEFLOW_API_KEY", "sk_live_secret_value_9999")
    assert main(["estimate", SAMPLES]) == 2
    err = capsys.readouterr().err
    assert "PLACEFLOW_BASE_URL" in err and "sk_live_secret_value" not in err


def test_a_deployment_run_refuses_local_paths_and_secret_urls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --deployment`: a local path is refused with how to upload it, a URL with user info
    or a query (Prefect stores parameters) is refused, --no-wait alone is refused; exit 2,
    before any Prefect server is asked."""
    from placeflow.errors import EXIT_USAGE

    assert main(["run", "places.csv", "--deployment", "file-run", "--json"]) == EXIT_USAGE
    said = json.loads(capsys.readouterr().out)
    assert "is a local path" in said["message"] and "s3://" in said["message"]
    for url in ("s3://AKIA:secret@bucket/a.csv", "s3://bucket/a.csv?X-Amz-Signature=abc"):
        assert main(["run", url, "--deployment", "file-run", "--json"]) == EXIT_USAGE
        said = json.loads(capsys.readouterr().out)
        assert "secret" not in said["message"] and "Signature" not in said["message"]
    assert main(["run", "places.csv", "--no-wait", "--json"]) == EXIT_USAGE
    assert "--deployment" in json.loads(capsys.readouterr().out)["message"]
