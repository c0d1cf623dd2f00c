"""What the CLI prints of a flow's result: the summary, and the HTML report the flow wrote."""

from __future__ import annotations

import importlib
import json
import logging

import pytest

from placeflow.cli.args import fail
from placeflow.cli.run import print_outcome
from placeflow.events import Event, Note
from placeflow.pipeline.account import RunSummary
from placeflow.reporting.summary import markdown_summary
from placeflow.runner.steps import emitter
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


def test_server_text_reaches_the_terminal_without_escape_sequences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A message quoting a server (or a file name) is printed with its control characters and
    bidi overrides shown as U+FFFD: in the summary, its warnings and an error exit; --json
    keeps the text as it is, escaped by JSON."""
    said = "job b1 failed: \x1b]0;owned\x07\x1b[2J\u202egnp.exe"
    shown = "job b1 failed: \ufffd]0;owned\ufffd\ufffd[2J\ufffdgnp.exe"
    inputs = {"files": {}, "warnings": [said]}
    data = {**summary(message=said, inputs=inputs).as_dict(), "exit_code": 0}
    assert print_outcome(dict(data), as_json=False) == 0
    out, err = capsys.readouterr()
    assert f"  {shown}" in out.splitlines() and f"placeflow: warning: {shown}" in err
    assert "\x1b" not in out + err and "\u202e" not in out + err
    assert fail(said, code=1, as_json=False) == 1
    assert capsys.readouterr().err == f"placeflow: {shown}\n"
    assert print_outcome(dict(data), as_json=True) == 0
    assert json.loads(capsys.readouterr().out)["message"] == said


def test_a_note_is_logged_without_escape_sequences(caplog: pytest.LogCaptureFixture) -> None:
    """A run's notes go to the log too (Prefect's run log, a terminal): printable there."""
    seen: list[Event] = []
    emit = emitter(seen.append)
    with caplog.at_level(logging.INFO, logger="placeflow"):
        emit(Note("chunk 2: job b2 failed: \x1b[31mred\u202e"))
    assert [r.getMessage() for r in caplog.records] == [
        "chunk 2: job b2 failed: \ufffd[31mred\ufffd"
    ]
    assert seen == [Note("chunk 2: job b2 failed: \x1b[31mred\u202e")]  # the event is as sent


def test_the_markdown_artifact_carries_the_warnings() -> None:
    """A flow's summary artifact (what a scheduled refresh shows in Prefect) lists the input
    warnings, e.g. the stale places a budgeted refresh left for the next one."""
    left = "14 of 19 stale places are left for a later refresh (--max-credits 5 buys 5; ...)"
    text = markdown_summary(summary(inputs={"files": {}, "warnings": [left]}))
    assert text.endswith(f"**Warnings**\n\n- {left}\n")
    assert "Warnings" not in markdown_summary(summary())


@pytest.mark.parametrize("module", ["session", "download", "poller"])
def test_the_api_loggers_write_server_text_as_text(
    caplog: pytest.LogCaptureFixture, module: str
) -> None:
    """The client's warnings quote job ids and error texts a server chose: each of its loggers
    shows their control characters and bidi overrides as U+FFFD, whatever the message."""
    log = importlib.import_module(f"placeflow.api.{module}").log
    with caplog.at_level(logging.WARNING, logger="placeflow"):
        log.warning("job %s: download attempt %d failed (%s)", "b\x1b]0;pwn\x07", 2, "\u202eoops")
    assert [r.getMessage() for r in caplog.records] == [
        "job b\ufffd]0;pwn\ufffd: download attempt 2 failed (\ufffdoops)"
    ]


def test_a_logged_traceback_quotes_the_server_as_text(caplog: pytest.LogCaptureFixture) -> None:
    """An exception logged with its traceback (its message quoting a server's error text) is
    written with the escape sequence and the bidi override shown as U+FFFD, lines kept."""
    log = importlib.import_module("placeflow.api.session").log
    with caplog.at_level(logging.ERROR, logger="placeflow"):
        try:
            raise RuntimeError("service said \x1b]0;pwn\x07 \u202eoops")
        except RuntimeError:
            log.exception("submit failed")
    assert "RuntimeError: service said \ufffd]0;pwn\ufffd \ufffdoops" in caplog.text
    assert "\x1b" not in caplog.text and "\u202e" not in caplog.text
    assert "Traceback (most recent call last):\n" in caplog.text


@pytest.mark.parametrize("name", ["prefect.flow_runs", "prefect.task_runs"])
def test_the_flow_run_loggers_write_server_text_as_text(name: str) -> None:
    """Under a flow, a retried stage's warning and a failed run's traceback go through
    Prefect's run loggers: once the flows' tasks are imported, those loggers' filters make the
    records printable (filtered here without a handler: Prefect's sends to its API)."""
    importlib.import_module("placeflow.flows.tasks")
    args = ("\x1b[2J\u2066x",)
    record = logging.LogRecord(name, logging.WARNING, __file__, 1, "fetch failed (%s)", args, None)
    assert logging.getLogger(name).filter(record)
    assert record.getMessage() == "fetch failed (\ufffd[2J\ufffdx)"
    broken = logging.LogRecord(name, logging.WARNING, __file__, 1, "%d chunks", ("x",), None)
    assert logging.getLogger(name).filter(broken)  # left to the handler to report, as before


def test_every_error_exit_prints_server_text_as_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error a command ends with (placeflow's own, research's, a failed flow's, a research
    summary's message) quotes a server or a file: printed with escape sequences and bidi
    overrides as U+FFFD."""
    from placeflow.cli import main as cli
    from placeflow.cli import research as research_cli
    from placeflow.cli import run as commands
    from placeflow.errors import PlaceflowError

    said = "503 from proxy: \x1b]0;owned\x07\u202eexe"
    shown = "503 from proxy: \ufffd]0;owned\ufffd\ufffdexe"

    def broken(args: object) -> int:
        raise PlaceflowError(said)

    monkeypatch.setattr(commands, "dispatch", broken)
    assert cli.main(["resume", "run_x"]) != 0
    assert capsys.readouterr().err == f"placeflow: {shown}\n"
    assert fail(PlaceflowError(said), code=1, as_json=False, prog=research_cli.PROG) == 1
    assert capsys.readouterr().err == f"placeflow research: {shown}\n"
    assert print_outcome({"status": "error", "message": said, "exit_code": 1}, as_json=False) == 1
    assert capsys.readouterr().err == f"placeflow: {shown}\n"
    research = {**dict.fromkeys(RunSummary.__dataclass_fields__, 0), "timings": {},
                "cpu_timings": {}, "changes": {}, "inputs": {}, "requests_open": 1,
                "requests_answered": 0}  # fmt: skip
    research.update(run_id="rr_1", status="interrupted", target=said, exit_code=1, message=said)
    assert research_cli._print(research, as_json=False) == 1
    got = capsys.readouterr()
    assert "\x1b" not in got.out + got.err and shown in got.err and shown in got.out
