"""Stage timings: every stage a run calls is timed by the injected timer, per-chunk stages
summed, in the data's order, shown in the JSON and the text summary."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import placeflow
from placeflow.emulator import Sandbox
from placeflow.events import Event, StageStarted
from placeflow.options import RunOptions
from placeflow.reporting.summary import json_summary, text_summary
from placeflow.runner.steps import Stages, Timer, direct
from placeflow.runner.target import Target
from tests.sandbox_target import served as served_sandbox
from tests.test_run import write_places

KEY = "sk_timings_paid_key_1234"


class Ticks:
    """A fake clock: each reading is `step` seconds after the last."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class ThreadTicks:
    """A fake clock of each thread's own, every reading `step` after that thread's last: the
    sender's readings never fall between the run thread's two readings of a stage."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.local = threading.local()

    def __call__(self) -> float:
        self.local.now = getattr(self.local, "now", 0.0) + self.step
        return float(self.local.now)


@pytest.fixture
def served() -> Iterator[tuple[Sandbox, Target]]:
    with served_sandbox(KEY) as pair:
        yield pair


def test_a_run_reports_a_timing_for_every_stage_in_order_within_the_total(
    served: tuple[Sandbox, Target], tmp_path: Path
) -> None:
    """Each stage the run called has a wall and a CPU timing, in the data's order, per-chunk
    stages summed over their calls, and the stages of the run's thread together take no more
    than the total (submit runs beside them, timed by its own thread's CPU); every call of a
    stage is announced, the warehouse's opening first."""
    sandbox, target = served
    calls: list[str] = []
    started: list[str] = []

    def step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        calls.append(name)
        return fn

    def on_event(event: Event) -> None:
        if isinstance(event, StageStarted):
            started.append(event.stage)

    summary = placeflow.run(
        [str(write_places(tmp_path / "p.csv", 30))],
        options=RunOptions(route="job", chunk_rows=10, force=True),
        db=tmp_path / "wh.duckdb", target=target, step=step, on_event=on_event,
        timer=Timer(wall=ThreadTicks(1.0), cpu=ThreadTicks(0.5), thread_cpu=ThreadTicks(0.5)),
    )  # fmt: skip
    assert summary.status == "completed"
    assert sandbox.stats()["jobs"]["created"] == 3  # the service saw the three chunks
    # the data's order: submit's thread may wrap its first call before or after the poll's
    ran = ["read", "normalize", "dedupe", "fresh", "plan", "budget", "open"]
    ran += ["submit", "poll", "fetch", "load", "account"]
    assert set(calls) == set(ran)
    assert list(summary.timings) == [*ran, "total"]
    assert list(summary.cpu_timings) == [*ran, "total"]
    for timings, tick in ((summary.timings, 1.0), (summary.cpu_timings, 0.5)):
        stages = {k: v for k, v in timings.items() if k != "total"}
        assert all(v > 0 for v in stages.values()), timings
        beside = stages.pop("submit")
        assert sum(stages.values()) <= timings["total"] and beside > 0
        # one reading before and after each call: a stage called n times reads n ticks
        # (load: once per batch of fetched files)
        loads = calls.count("load")
        assert timings["submit"] == 3 * tick and timings["load"] == loads * tick and loads
        # read a batch at a time: the one batch, and the call that finds no more
        assert timings["read"] == 2 * tick and timings["normalize"] == tick
    per_chunk = ("submit", "poll", "fetch", "load")
    assert started[0] == "warehouse"  # opened first: a display says what the run waits for
    assert list(dict.fromkeys(s for s in started[1:] if s not in per_chunk)) == [
        s for s in ran if s not in per_chunk
    ]
    # each call of a per-chunk stage announces it (a live display shows the stage as it is)
    assert (started.count("submit"), started.count("fetch")) == (3, 3)
    assert started.count("load") == calls.count("load")
    assert started.count("poll") == 4  # the poll runs again after each of the 3 jobs, and ends
    shown = json.loads(json_summary(summary))
    assert shown["timings"] == summary.timings and "stages" not in shown
    line = next(x for x in text_summary(summary).splitlines() if "time by stage" in x)
    assert line.split("time by stage")[1].strip().startswith("read 2.0 s, normalize 1.0 s")


def test_a_generator_stage_is_timed_only_while_it_runs() -> None:
    """Work done with a poll generator's items counts under its own stage, not the poll."""
    wall = Ticks(1.0)
    r = Stages(step=direct, emit=lambda e: None, timer=Timer(wall=wall, cpu=Ticks(1.0)))

    def statuses(n: int) -> Iterator[int]:
        for i in range(n):
            wall.now += 10  # the poll's own waiting
            yield i

    def fetch(i: int) -> int:
        wall.now += 100  # the fetch's own work
        return i

    for item in r.stream("poll", statuses)(2):
        r.each("fetch", fetch)(item)
    wall_by, _ = r.timings()
    # poll: the call and 3 next() (two items and the end), 1 tick each, plus 2 x 10 waited
    assert wall_by["poll"] == 4 * 1 + 20
    assert wall_by["fetch"] == 2 * (1 + 100)
    assert wall_by["poll"] + wall_by["fetch"] <= wall_by["total"]


def test_a_stage_timed_within_another_counts_under_itself_alone() -> None:
    """A batch of loads made while the poll waits (a stage timed within another on its thread)
    counts under load, and comes off the poll's time."""
    wall = Ticks(1.0)
    r = Stages(step=direct, emit=lambda e: None, timer=Timer(wall=wall, cpu=Ticks(1.0)))

    def load() -> None:
        wall.now += 100  # the load's own work

    def statuses() -> Iterator[int]:
        wall.now += 10  # the poll's own waiting
        r.batch("load", load)()  # loaded before the wait
        yield 0

    for _ in r.stream("poll", statuses)():
        pass
    wall_by, _ = r.timings()
    assert wall_by["load"] == 1 + 100
    # poll: the call and 2 next() (one item and the end), 1 tick each, 10 waited, and the
    # load's first reading (the fake clock moves at each reading); the load's 101 are not
    assert wall_by["poll"] == 3 * 1 + 10 + 1
    assert wall_by["poll"] + wall_by["load"] <= wall_by["total"]
