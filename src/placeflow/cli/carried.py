"""How the CLI carries a run, a resume or a refresh out: as a Prefect flow run when a Prefect
server is configured (PREFECT_API_URL) or `--prefect` asks, otherwise the same stages in this
process without Prefect (`placeflow.runner.ending`, which the flows call too), never importing it.

Either way the live display is drawn on stderr while it runs (only on a terminal, never under
--json, --quiet or CI), says what the command waits for before its first event, and asks the
run to poll its jobs often enough to move (`placeflow.cli.progress.watch_every`); a Ctrl-C
handler (`placeflow.cli.interrupt`) is armed meanwhile, and clears the display before it says
how to finish the run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from placeflow.config import Settings, apply_prefect_defaults, in_ci, prefect_server_url
from placeflow.errors import FailedResult

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

    from placeflow.cli.interrupt import Interrupt
    from placeflow.cli.progress import ProgressDisplay
    from placeflow.events import Event
    from placeflow.runner.ending import Outcome

OnEvent = Callable[["Event"], None] | None
Local = Callable[[OnEvent], "Outcome"]
"""The command carried out without Prefect, given the display's callback."""


def add_prefect(p: argparse.ArgumentParser) -> None:
    """`--prefect`: carry the command out as a Prefect flow run."""
    p.add_argument(
        "--prefect",
        action="store_true",
        help="carry it out as a Prefect flow run, with its artifacts in Prefect (the default"
        " when PREFECT_API_URL names a server; without one a temporary server is started,"
        " which takes seconds). Otherwise the same stages run without Prefect and the"
        " artifacts are written as files in runs/RUN_ID/ beside the warehouse",
    )


def under_prefect(args: argparse.Namespace) -> bool:
    """Whether a command runs as a Prefect flow run: asked (--prefect), or a Prefect server is
    configured (PREFECT_API_URL); otherwise it runs the same stages without Prefect."""
    return bool(getattr(args, "prefect", False)) or prefect_server_url() is not None


def shown(args: argparse.Namespace) -> bool:
    """Whether the live display is drawn: on a terminal, never under --json, --quiet or CI."""
    from placeflow.cli.progress import wanted

    return wanted(sys.stderr, quiet=args.quiet, as_json=args.json, ci=in_ci())


def watched(args: argparse.Namespace, settings: Settings) -> float | None:
    """`RunOptions.watch_every` for the command: set when the display is drawn."""
    from placeflow.cli.progress import watch_every

    return watch_every(settings.limits) if shown(args) else None


def waiting_for(args: argparse.Namespace, settings: Settings) -> str:
    """What the command waits for before the run's first event."""
    if under_prefect(args):
        server = prefect_server_url()
        if server is None:
            return "starting Prefect's temporary server (--prefect: seconds)"
        return f"starting a flow run on the Prefect server at {server}"
    return "starting the embedded sandbox" if settings.uses_sandbox else "starting"


def carried(
    args: argparse.Namespace,
    settings: Settings,
    *,
    title: str,
    flow: Callable[[], Callable[..., Any]],
    params: dict[str, Any],
    local: Local,
    stop: Interrupt | None = None,
) -> tuple[Any, str | None]:
    """The command carried out with the live display: as the flow `flow()` returns, called
    with `params`, or `local` without Prefect (see `under_prefect`). Its result (the summary
    dict, or what the flow returned) and, when it did not end well, the message why."""
    from placeflow.cli.progress import ProgressDisplay

    show = shown(args)
    display = ProgressDisplay(title=title, enabled=show, waiting=waiting_for(args, settings))
    on_event = _telling(display, show=show, quiet=bool(getattr(args, "quiet", False)))
    with display, _armed(stop, display):
        if under_prefect(args):
            apply_prefect_defaults()
            run_flow = flow()  # Prefect loads only when asked or configured
            # the display is an in-process callback: Prefect stores a placeholder for it
            state: State[Any] = run_flow(**params, on_event=on_event, return_state=True)
            result = state.result(raise_on_failure=False)
            if isinstance(result, FailedResult):  # a run that did not end well: its summary
                return dict(result), state.message
            return result, state.message
        outcome = local(on_event)
        return outcome.data, outcome.failure


def _telling(display: ProgressDisplay, *, show: bool, quiet: bool) -> OnEvent:
    """The run's events for the display, and its notes (a wait for places another run is
    buying, and the wait's end, among them) said on stderr unless --quiet: a run that waits
    says so even with no display drawn."""
    from placeflow.events import Note
    from placeflow.support.text import printable

    if quiet:
        return display if show else None

    def on_event(event: Event) -> None:
        if isinstance(event, Note):
            display.say(printable(f"placeflow: {event.message}"))
        if show:
            display(event)

    return on_event


@contextmanager
def _armed(stop: Interrupt | None, display: ProgressDisplay) -> Iterator[None]:
    """Ctrl-C: the display cleared, one line with the resume command, exit 130."""
    if stop is None:
        yield
        return
    stop.before_saying, stop.before_leaving = display.clear, display.release
    stop.at_rest = display.at_rest
    stop.arm()
    try:
        yield
    finally:
        stop.disarm()
