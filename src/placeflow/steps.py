"""How a run calls its stages: through a step wrapper, announced as events, their summaries kept.

`Step` is what `placeflow.run(step=...)` takes: `step(name, fn)` returns the callable that
runs the stage (`direct`, the identity, without Prefect; a Prefect task in the flow).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import fields
from typing import Any, ParamSpec, Protocol, TypeVar

from placeflow.events import Emit, Event, Note, StageFinished, StageStarted

log = logging.getLogger("placeflow.run")
P = ParamSpec("P")
R = TypeVar("R")


class Step(Protocol):
    """Wraps each stage call: `step(name, fn)(*args)`; the flow's makes it a Prefect task."""

    def __call__(self, name: str, fn: Callable[P, R], /) -> Callable[P, R]: ...


def direct(name: str, fn: Callable[P, R]) -> Callable[P, R]:
    """The step of a run without Prefect: call the stage as it is."""
    return fn


class Stages:
    """One invocation: the stages' shared arguments. A plain class, so a Prefect task sees it
    as one opaque value (never copied or walked), and nothing about it is module-level."""

    def __init__(self, *, step: Step, emit: Emit) -> None:
        self.step = step
        self.emit = emit
        self.stages: dict[str, Any] = {}

    def stage(self, name: str, fn: Callable[P, R]) -> Callable[P, R]:
        """`fn` through the step, announced; its summary (the last of a tuple) kept."""
        wrapped = self.step(name, fn)

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            self.emit(StageStarted(name))
            result = wrapped(*args, **kwargs)
            info = result[-1] if isinstance(result, tuple) else result
            self.stages[name] = info
            self.emit(StageFinished(name, info, counts(info)))
            return result

        return call

    def each(self, name: str, fn: Callable[P, R]) -> Callable[P, R]:
        """`fn` through the step, once per chunk; each summary appended under `name`."""
        wrapped = self.step(name, fn)

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            result = wrapped(*args, **kwargs)
            self.stages.setdefault(name, []).append(result)
            return result

        return call


def counts(info: Any) -> dict[str, int]:
    try:
        found = {f.name: getattr(info, f.name) for f in fields(info)}
    except TypeError:
        return {}
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def emitter(on_event: Callable[[Event], None] | None) -> Emit:
    def emit(event: Event) -> None:
        if isinstance(event, Note):
            log.info("%s", event.message)
        if on_event is not None:
            on_event(event)

    return emit
