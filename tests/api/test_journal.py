"""The key's spend journal: which runs had spend in flight when, shared through a file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from placeflow.api.journal import KEEP, SpendJournal


def test_others_are_the_runs_in_flight_during_the_span(tmp_path: Path) -> None:
    """A run's usage span overlaps another's open span, or a closed one that ended inside it;
    never its own, never one that ended before the span began."""
    now = [100.0]
    j = SpendJournal(tmp_path / "k.spend", clock=lambda: now[0])
    j.active("early")
    now[0] = 110.0
    j.settled("early")
    j.active("mine")
    now[0] = 120.0
    j.active("open")
    now[0] = 130.0
    assert j.others("mine", since=111.0) == ["open"]
    assert j.others("mine", since=105.0) == ["early", "open"]
    assert j.others("mine", since=105.0, until=115.0) == ["early"]
    j.settled("open")
    now[0] = 140.0
    assert j.others("mine", since=131.0) == []


def test_a_run_active_again_opens_a_new_span_and_old_spans_are_pruned(tmp_path: Path) -> None:
    """A resumed run opens a second span; a span closed longer than KEEP ago is dropped."""
    now = [0.0]
    path = tmp_path / "k.spend"
    j = SpendJournal(path, clock=lambda: now[0])
    j.active("r")
    j.active("r")  # still open: no second span
    now[0] = 10.0
    j.settled("r")
    now[0] = 20.0
    j.active("r")
    assert json.loads(path.read_text())["r"]["spans"] == [[0.0, 10.0], [20.0, None]]
    j.settled("r")
    now[0] = 20.0 + KEEP + 1
    j.active("s")
    assert list(json.loads(path.read_text())) == ["s"]


def test_another_process_sees_the_runs_this_one_has_in_flight(tmp_path: Path) -> None:
    """Two processes, one file: what one records, the other reads."""
    path = tmp_path / "k.spend"
    SpendJournal(path).active("here")
    script = (
        "import sys; from pathlib import Path; from placeflow.api.journal import SpendJournal;"
        "j = SpendJournal(Path(sys.argv[1])); print(j.others('there', since=0));"
        "j.active('there')"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['here']"
    assert SpendJournal(path).others("here", since=0) == ["there"]
