"""The progress tally and its drawing, from events, with an injected clock (no terminal)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console

from placeflow.cli.progress import ProgressDisplay, render, wanted, watch_every
from placeflow.events import (
    NOTE_SECONDS,
    ChunkSubmitted,
    CreditsCharged,
    CreditsHeld,
    Event,
    FileVerified,
    JobProgress,
    Note,
    RowsLoaded,
    StageFinished,
    StageStarted,
    Tally,
)
from placeflow.fields import RateLimits


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def prepared() -> list[Event]:
    return [
        StageStarted("read"),
        StageFinished("read", None, {"rows": 1000}),
        StageFinished("normalize", None, {"rejected": 20}),
        StageFinished("dedupe", None, {"duplicates": 80}),
        StageFinished("fresh", None, {"fresh": 100}),
        StageFinished("plan", None, {"places": 800, "chunks": 2}),
    ]


def test_counts_each_chunk_once_and_eta_from_the_observed_rate() -> None:
    """Replayed events count once; the ETA is the rows left over the observed rate."""
    clock = Clock()
    t = Tally(clock)
    for e in prepared():
        t(e)
    t(ChunkSubmitted(0, "job", 400, "b0"))
    t(CreditsHeld(0, 400))
    t(ChunkSubmitted(0, "job", 400, "b0", replayed=True))
    t(ChunkSubmitted(1, "job", 400, "b1"))
    assert t.eta() is None  # nothing processed yet: no rate
    clock.now += 10
    t(JobProgress("b0", "running", 100, 400))
    t(JobProgress("b1", "running", 100, 400))
    assert t.rows_processed == 200 and t.rate() == 20.0
    assert t.eta() == 30.0  # 600 rows left at 20 rows/s
    t(JobProgress("b0", "running", 50, 400))  # a stale answer never goes back
    assert t.rows_processed == 200
    t(FileVerified(0, "p", "s", 400))
    t(RowsLoaded(0, 400, 390, 10))
    t(RowsLoaded(0, 400, 390, 10))
    t(CreditsCharged(0, 390, 10))
    counted = (len(t.submitted), len(t.jobs), t.rows_loaded, t.loaded_split())
    assert counted == (2, 2, 400, (390, 10))
    assert (t.credits_held, t.credits_charged, t.credits_released) == (400, 390, 10)
    assert 0.1 < t.fraction() < 1.0
    t(StageFinished("account", None, {}))
    assert t.fraction() == 1.0 and t.eta() == 0.0


def test_resumed_run_takes_its_size_from_the_jobs() -> None:
    """Without a plan stage (resume) the rows to process are what the jobs hold."""
    t = Tally(Clock())
    t(JobProgress("b7", "running", 300, 500))
    t(ChunkSubmitted(3, "sync", 20, None))
    assert (t.to_process, t.rows_processed) == (520, 320)


def test_render_shows_every_count() -> None:
    """The drawn table carries read, rejected, duplicates, fresh, planned, jobs, rows, credits."""
    t = Tally(Clock())
    for e in [*prepared(), ChunkSubmitted(0, "job", 400, "b0"), RowsLoaded(0, 400, 400, 0)]:
        t(e)
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(render(t))
    text = console.export_text()
    for label, value in [
        ("read", "1,000"),
        ("rejected", "20"),
        ("duplicates", "80"),
        ("fresh", "100"),
        ("planned", "800"),
        ("submitted", "1 / 2"),
        ("loaded", "400 / 800"),
    ]:
        assert re.search(rf"^{label} +{value}", text, re.M), (label, text)


def test_a_note_quoting_a_server_or_a_file_is_drawn_as_plain_text() -> None:
    """Brackets are not markup (a closing "[/red]" would stop the drawing), and escape
    sequences and bidi overrides never reach the terminal."""
    t = Tally(Clock())
    for e in prepared():
        t(e)
    t(Note("chunk 3: job b3 failed: [/red] [bold]x\x1b[2J\u202eevil data[1].csv"))
    console = Console(file=io.StringIO(), width=300, record=True)
    console.print(render(t))
    text = console.export_text()
    assert "chunk 3: job b3 failed: [/red] [bold]x\ufffd[2J\ufffdevil data[1].csv" in text
    assert "\x1b[2J" not in text and "\u202e" not in text


def test_display_draws_only_when_enabled() -> None:
    """Disabled, the display only counts; enabled on a terminal it draws with controls."""
    quiet = Terminal()
    with ProgressDisplay(stream=quiet, enabled=False) as show:
        for e in prepared():
            show(e)
    assert quiet.getvalue() == "" and show.tally.planned == 800
    term = Terminal()
    with ProgressDisplay(stream=term, clock=Clock()) as show:
        for e in prepared():
            show(e)
    assert "\x1b[" in term.getvalue() and "800" in term.getvalue()


def test_wanted_only_on_a_terminal_without_json_quiet_or_ci() -> None:
    """Shown on a TTY alone; --json, --quiet, CI or a pipe each switch it off."""
    tty, pipe = Terminal(), io.StringIO()
    assert wanted(tty, quiet=False, as_json=False, ci=False)
    assert not wanted(pipe, quiet=False, as_json=False, ci=False)
    for flags in ({"quiet": True}, {"as_json": True}, {"ci": True}):
        assert not wanted(tty, **{"quiet": False, "as_json": False, "ci": False, **flags})


def test_ci_is_read_from_the_environment_once_in_config() -> None:
    """CI set to anything but blank, 0, false or no counts as CI."""
    from placeflow.config import in_ci

    assert in_ci({"CI": "true"}) and in_ci({"CI": "1"})
    assert not in_ci({}) and not in_ci({"CI": "false"}) and not in_ci({"CI": "0"})


def drawn(t: Tally, **kwargs: Any) -> str:
    console = Console(file=io.StringIO(), width=140, record=True)
    console.print(render(t, **kwargs))
    return console.export_text()


def test_the_head_says_the_stage_the_run_is_in_or_what_it_waits_for() -> None:
    """Before any event the head says what the command waits for; then the stage as it is,
    per-chunk stages included (it no longer stays at 'open' while jobs are polled, loaded)."""
    t = Tally(Clock())
    assert "waiting for Prefect" in drawn(t, waiting="waiting for Prefect").splitlines()[0]
    for e in prepared():
        t(e)
    t(StageStarted("open"))
    said = {
        "submit": "submitting jobs",
        "poll": "waiting for the service",
        "fetch": "downloading results",
        "load": "loading results",
    }
    for stage, words in said.items():
        t(StageStarted(stage))
        assert words in drawn(t).splitlines()[0], stage


def test_eta_from_the_services_own_eta_before_any_row_is_processed() -> None:
    """A job's eta at submission gives an ETA at once (no `--:--` until rows move), counting
    down, stretched for rows planned but not yet in a job; a rate, once seen, takes over."""
    clock = Clock()
    t = Tally(clock)
    for e in prepared():  # 800 rows planned in 2 chunks
        t(e)
    t(ChunkSubmitted(0, "job", 400, "b0", eta_seconds=30))
    assert t.eta() == 60.0  # 400 rows in 30 s, and 400 more not yet submitted
    t(ChunkSubmitted(1, "job", 400, "b1", eta_seconds=40))
    clock.now += 10
    assert t.eta() == 30.0  # the last job in flight ends 40 s after its submission
    t(JobProgress("b0", "running", 200, 400, eta_seconds=10))
    assert t.eta() == 30.0  # one report: no rate yet
    clock.now += 10
    t(JobProgress("b0", "running", 400, 400, eta_seconds=0))
    assert t.rate() == 20.0 and t.eta() == 20.0  # 400 rows left at the rate seen


def test_jobs_in_flight_are_drawn_with_the_rows_the_service_reported() -> None:
    """Each job not ended has a line with its processed rows as last polled; ended jobs go."""
    t = Tally(Clock())
    for e in prepared():
        t(e)
    t(ChunkSubmitted(0, "job", 400, "b0"))
    t(ChunkSubmitted(1, "job", 400, "b1"))
    t(JobProgress("b0", "running", 120, 400))
    text = drawn(t)
    assert re.search(r"120 / 400 .*b0: running", text), text
    assert re.search(r"0 / 400 .*b1: submitted", text), text
    assert re.search(r"^processed +120 / 800", text, re.M), text
    t(JobProgress("b0", "completed", 400, 400))
    assert "b0: " not in drawn(t) and "b1: submitted" in drawn(t)


def test_a_note_is_drawn_while_it_is_news_and_never_after_the_end() -> None:
    """A note stays NOTE_SECONDS (a stale 'chunk 4: submitted' line goes), and the last frame
    of a run that ended carries none."""
    clock = Clock()
    t = Tally(clock)
    for e in prepared():
        t(e)
    t(Note("chunk 4: submitted job b4 (400 rows)"))
    assert "chunk 4: submitted" in drawn(t)
    clock.now += NOTE_SECONDS
    assert "chunk 4" not in drawn(t)
    t(Note("credits ran out"))
    assert "credits ran out" in drawn(t)
    t(StageFinished("account", None, {}))
    assert "credits ran out" not in drawn(t)


def test_clear_erases_the_display_and_draws_no_more() -> None:
    """`clear` (the Ctrl-C path) stops the live display and erases what it drew, so the line
    printed next stays; later events draw nothing."""
    term = Terminal()
    show = ProgressDisplay(stream=term, clock=Clock())
    show.start()
    for e in prepared():
        show(e)
    show.clear()
    drawn_then = term.getvalue()
    assert drawn_then.endswith("\x1b[2K")  # the last drawn line erased, the cursor at its start
    show(Note("after"))
    show.stop()
    assert term.getvalue() == drawn_then


def test_a_display_asks_for_one_poll_in_ten_of_the_keys_pace() -> None:
    """Watching costs a tenth of the key's slowest pace: 6 s on the paid tier, 60 s on free."""
    assert watch_every(RateLimits.for_tier("paid")) == pytest.approx(6.0)
    assert watch_every(RateLimits.for_tier("free")) == pytest.approx(60.0)


class Interrupting(Terminal):
    """A terminal whose next write is interrupted: `then` is called from inside it, as a
    signal handler run by the main thread in the middle of the display's write is."""

    def __init__(self) -> None:
        super().__init__()
        self.then: Any = None

    def write(self, s: str) -> int:
        then, self.then = self.then, None
        if then is not None:
            then()
        return super().write(s)


def test_a_ctrl_c_inside_a_frame_clears_the_display_once_the_frame_is_written() -> None:
    """A Ctrl-C that comes while the display writes a frame (an event's, a note's) clears it
    once that frame is written: the erase is the last thing on the terminal, and the Ctrl-C's
    line printed then stays under no display line."""
    term = Interrupting()
    show = ProgressDisplay(stream=term, clock=Clock())
    show.start()
    for e in prepared():
        show(e)
    done: list[str] = []

    def ctrl_c() -> None:
        show.clear()
        done.append(term.getvalue())

    term.then = lambda: show.at_rest(ctrl_c)
    show.say("placeflow: chunk 0: submitted job b0 (400 rows)")
    assert len(done) == 1 and "chunk 0: submitted job b0" in done[0]
    assert done[0].endswith("\x1b[2K")  # erased after the note's frame, not inside it
    show(Note("after"))
    show.stop()
    assert term.getvalue() == done[0]


def test_at_rest_acts_at_once_outside_the_displays_writes() -> None:
    """Outside a write of the display (or with none drawn) the Ctrl-C acts at once."""
    show = ProgressDisplay(stream=Terminal(), enabled=False)
    done: list[int] = []
    show.at_rest(lambda: done.append(1))
    assert done == [1]
