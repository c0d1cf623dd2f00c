"""What the CLI prints of a flow's result: the summary, and the HTML report the flow wrote."""

from __future__ import annotations

import json

import pytest

from placeflow.commands import print_outcome
from tests.test_cli_ux import summary


def test_the_report_a_flow_wrote_is_named_after_the_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A flow's result names the HTML report it wrote: the text summary ends with its path,
    the JSON document carries it as `report`; a result without one prints no such line."""
    data = {**summary().as_dict(), "report": "/w/reports/r1.html", "exit_code": 0}
    assert print_outcome(dict(data), as_json=False) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "  report: /w/reports/r1.html"
    assert print_outcome(dict(data), as_json=True) == 0
    assert json.loads(capsys.readouterr().out)["report"] == "/w/reports/r1.html"
    del data["report"]
    assert print_outcome(dict(data), as_json=False) == 0
    assert "report:" not in capsys.readouterr().out
