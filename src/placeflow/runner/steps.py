"""How a run calls its stages: through a step wrapper, announced as events, their summaries kept.

`Step` is what `placeflow.run(step=...)` takes: `step(name, fn)` returns the callable that
runs the stage (`direct`, the identity, without Prefect; a Prefect task in the flow).

`Stages` also times each stage, wall and CPU seconds by a `Timer` (injectable for tests), summed
over the calls of a per-chunk stage (submit, poll, fetch, load): a poll generator is timed only
while it runs, not while the fetch and load it feeds run. A stage called from another thread
(submit, which runs beside poll, fetch and load: `placeflow.runner.sender`) counts that thread's CPU
seconds, and its wall time overlaps theirs, so it is not part of the stages' sum within
`total`; the stages of the run's thread count the process's CPU seconds (DuckDB's own threads
work for them), which while the sender runs include its seconds too. The run summary's
`timings` and `cpu_timings` come from here, in the order the stages first ran, with the
invocation's `total`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, ParamSpec, Protocol, TypeVar, cast

from placeflow.events import Emit, Event, Note, StageFinished, StageStarted
from placeflow.pipeline.stages import StageInfos, StageName
from placeflow.runner.sender import locked
from placeflow.support.text import printable_logger

log = printable_logger("placeflow.run")
P = ParamSpec("P")
R = TypeVar("R")


class Step(Protocol):
    """Wraps each stage call: `step(name, fn)(*args)`; the flow's makes it a Prefect task."""

    def __call__(self, name: str, fn: Callable[P, R], /) -> Callable[P, R]: ...


def direct(name: str, fn: Callable[P, R]) -> Callable[P, R]:
    """The step of a run without Prefect: call the stage as it is."""
    return fn


@dataclass(frozen=True)
class Timer:
    """Where stage times come from: a monotonic wall clock and the process's CPU time, in
    seconds; a test passes fakes."""

    wall: Callable[[], float] = time.perf_counter
    cpu: Callable[[], float] = time.process_time
    thread_cpu: Callable[[], float] = time.thread_time
    """The CPU seconds of the calling thread: a stage run beside the others is timed by it."""


SYSTEM_TIMER = Timer()


class Stages:
    """One invocation: the stages' shared arguments. A plain class, so a Prefect task sees it
    as one opaque value (never copied or walked), and nothing about it is module-level."""

    def __init__(self, *, step: Step, emit: Emit, timer: Timer = SYSTEM_TIMER) -> None:
        self.step = step
        self.emit = locked(emit)  # per-chunk stages announce themselves from two threads
        self.stages: StageInfos = {}
        """Each stage's info by name (the registry's types: `placeflow.pipeline.stages`)."""
        self.timer = timer
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._began = (timer.wall(), timer.cpu())
        self._thread = threading.get_ident()
        self._within = threading.local()
        """Per thread: the wall and CPU seconds of stages timed within the ones running."""

    def expect(self, *names: StageName) -> None:
        """Stages about to run side by side, listed in the data's order (the timings' order)."""
        for name in names:
            self.wall.setdefault(name, 0.0)
            self.cpu.setdefault(name, 0.0)

    def _timed(self, name: StageName, fn: Callable[[], R]) -> R:
        """`fn()`, its wall and CPU seconds added to `name`'s (the key made when it starts),
        less those of stages timed within it on its thread (a batch of loads made while the
        poll waits counts under load, not under poll too)."""
        self.expect(name)
        cpu_of = self.timer.cpu if threading.get_ident() == self._thread else self.timer.thread_cpu
        within: list[list[float]] = self._within.__dict__.setdefault("stack", [])
        within.append([0.0, 0.0])
        wall, cpu = self.timer.wall(), cpu_of()
        try:
            return fn()
        finally:
            spent_wall, spent_cpu = self.timer.wall() - wall, cpu_of() - cpu
            inner_wall, inner_cpu = within.pop()
            self.wall[name] += spent_wall - inner_wall
            self.cpu[name] += spent_cpu - inner_cpu
            if within:
                within[-1][0] += spent_wall
                within[-1][1] += spent_cpu

    def timed(self, name: StageName, fn: Callable[[], R]) -> R:
        """`fn()` timed under `name` without announcing it: work of a stage done ahead of its
        own call (a larger run's plan written in parts before its open)."""
        return self._timed(name, fn)

    def timings(self) -> tuple[dict[str, float], dict[str, float]]:
        """Wall and CPU seconds by stage, in the order they first ran, each with `total`: the
        invocation's time so far, which the stages' sum never exceeds."""
        wall, cpu = self.timer.wall() - self._began[0], self.timer.cpu() - self._began[1]
        return (
            {**{k: round(v, 4) for k, v in self.wall.items()}, "total": round(wall, 4)},
            {**{k: round(v, 4) for k, v in self.cpu.items()}, "total": round(cpu, 4)},
        )

    def stage(self, name: StageName, fn: Callable[P, R]) -> Callable[P, R]:
        """`fn` through the step, announced, timed; its summary (the last of a tuple) kept."""
        wrapped = self.step(name, fn)

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            self.emit(StageStarted(name))
            result = self._timed(name, lambda: wrapped(*args, **kwargs))
            info = result[-1] if isinstance(result, tuple) else result
            _infos(self.stages)[name] = info
            self.emit(StageFinished(name, info, counts(info)))
            return result

        return call

    def each(self, name: StageName, fn: Callable[P, R]) -> Callable[P, R]:
        """`fn` through the step, once per chunk, announced, timed (summed); each summary
        appended under `name`."""
        wrapped = self.step(name, fn)

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            self.emit(StageStarted(name))  # a live display shows the stage the run is in
            result = self._timed(name, lambda: wrapped(*args, **kwargs))
            _infos(self.stages).setdefault(name, []).append(result)
            return result

        return call

    def started(self, name: StageName) -> None:
        """A stage run a batch at a time (`batch`) begins: announced; `done` ends it."""
        self.expect(name)
        self.emit(StageStarted(name))

    def batch(self, name: StageName, fn: Callable[P, R]) -> Callable[P, R]:
        """`fn` through the step, once per batch of a stage run a batch at a time, timed
        (summed); the stage's own summary is given to `done` once its batches have run."""
        wrapped = self.step(name, fn)

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return self._timed(name, lambda: wrapped(*args, **kwargs))

        return call

    def done(self, name: StageName, info: Any) -> None:
        """A stage run a batch at a time ends with `info`, its summary: kept, announced."""
        _infos(self.stages)[name] = info
        self.emit(StageFinished(name, info, counts(info)))

    def stream(self, name: StageName, fn: Callable[P, Iterator[R]]) -> Callable[P, Iterator[R]]:
        """A generator stage through the step, timed only while it runs (and announced each
        time it runs again): what its caller does with each item (fetch, load) counts under
        that stage, not this one."""
        wrapped = self.step(name, fn)

        def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[R]:
            items = self._timed(name, lambda: iter(wrapped(*args, **kwargs)))
            done = object()
            while True:
                self.emit(StageStarted(name))
                item = self._timed(name, lambda: next(items, done))
                if item is done:
                    return
                yield cast(R, item)

        return call


def _infos(stages: StageInfos) -> dict[str, Any]:
    """The infos as a plain dict, for a stage named at run time (its name is a `StageName`)."""
    return cast(dict[str, Any], stages)


def counts(info: Any) -> dict[str, int]:
    try:
        found = {f.name: getattr(info, f.name) for f in fields(info)}
    except TypeError:
        return {}
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def emitter(on_event: Callable[[Event], None] | None) -> Emit:
    def emit(event: Event) -> None:
        if isinstance(event, Note):
            log.info("%s", event.message)  # a note may quote a server: the logger shows it as text
        if on_event is not None:
            on_event(event)

    return emit
