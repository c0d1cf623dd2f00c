"""The flows' step wrapper (`as_task`): what a run's stages become under Prefect.

A stage called once per run (read, normalize, dedupe, fresh, plan, budget, open, account) is a
task run of its own, named after the stage: the Prefect UI shows the flow's tasks. A stage
called once per chunk (submit, send-batch, fetch, load: a hundred calls each at a million
rows) is a plain call inside the flow, logged to the flow run's log with its counts and
seconds: a task run costs API round trips to the server every time, which would grow with the
chunk count. Either way the stages that talk to the service are retried for transient failures
only (3 times, 5 s apart): a retry resumes from the warehouse, so it never pays twice.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError

from placeflow.api.errors import TransientError
from placeflow.pipeline.stages import NETWORK
from placeflow.pipeline.stages import PER_CHUNK as STAGE_PER_CHUNK
from placeflow.runner.steps import counts
from placeflow.store.diskfull import storage_stop
from placeflow.support.text import printable_logger

P = ParamSpec("P")
R = TypeVar("R")
NETWORK_STAGES = NETWORK
"""Stages that talk to the service (the stage registry's, `placeflow.pipeline.stages`): retried
for transient failures."""
PER_CHUNK = STAGE_PER_CHUNK
"""Stages called once per chunk (the registry's): plain calls in the flow, logged, not task
runs."""
RETRIES = 3
RETRY_DELAY = 5.0
"""Seconds between a network stage's attempts."""
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
"""The loggers of `get_run_logger` and of Prefect's engine, whose records (a retried stage's
error, a failed run's traceback) quote what a server sent: made printable like placeflow's own
(the filter sits beside Prefect's own API-key filter on them)."""
for _name in RUN_LOGGERS:
    printable_logger(_name)


def _retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Task retries are for transient failures only; anything else fails the task at once."""
    try:
        state.result()
    except TransientError:
        return True
    except Exception:
        return False
    return False


@dataclass(frozen=True)
class _Stopped:
    """What a task hands back instead of raising when its storage stopped it (a full or
    read-only disk): the flow raises it again and ends with one message and no traceback
    (Prefect logs every exception raised in a task as an ERROR with its traceback)."""

    error: BaseException


def as_task(name: str, fn: Callable[P, R]) -> Callable[P, R]:
    """The step wrapper: a per-run stage becomes a task run named after it, a per-chunk
    stage a logged call (`chunk_call`).

    The poll stage is a generator feeding fetch and load as jobs end; it runs in the flow itself.
    """
    if inspect.isgeneratorfunction(fn):
        return cast(Callable[P, R], fn)  # isgeneratorfunction narrowed R to a Generator
    if name in PER_CHUNK:
        return chunk_call(name, fn, log=run_logger())
    network = name in NETWORK_STAGES
    make = task(
        name=name,
        cache_policy=NO_CACHE,
        retries=RETRIES if network else 0,
        retry_delay_seconds=RETRY_DELAY if network else 0,
        retry_condition_fn=_retry_transient if network else None,
    )

    @functools.wraps(fn)
    def body(*args: P.args, **kwargs: P.kwargs) -> R | _Stopped:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if storage_stop(exc) is None:
                raise
            return _Stopped(exc)

    staged = make(body)

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        result = staged(*args, **kwargs)
        if isinstance(result, _Stopped):
            raise result.error
        return result

    return call


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The flow run's logger (its records reach the Prefect UI), taken in the flow's own
    context so that a stage called from another thread logs there too; placeflow's own
    logger outside a flow run."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("placeflow.run")


def chunk_call(
    name: str,
    fn: Callable[P, R],
    *,
    log: logging.Logger | logging.LoggerAdapter[logging.Logger],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.perf_counter,
) -> Callable[P, R]:
    """`fn` called as it is, its summary's counts and seconds logged at INFO; a network
    stage's transient failure retried RETRIES times, RETRY_DELAY seconds apart (each retry
    logged as a warning), as its task would have been."""
    retried = name in NETWORK_STAGES

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        attempt = 0
        while True:
            began = clock()
            try:
                result = fn(*args, **kwargs)
            except TransientError as exc:
                if not retried or attempt >= RETRIES:
                    raise
                attempt += 1
                log.warning(
                    "%s failed (%s: %s); retry %d of %d in %g s",
                    name, type(exc).__name__, exc, attempt, RETRIES, RETRY_DELAY,
                )  # fmt: skip
                sleep(RETRY_DELAY)
                continue
            info = result[-1] if isinstance(result, tuple) else result
            shown = " ".join(f"{k}={v}" for k, v in counts(info).items())
            log.info("%s%s (%.2f s)", name, f": {shown}" if shown else "", clock() - began)
            return result

    return call
