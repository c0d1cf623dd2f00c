"""`placeflow research` that SIGKILLs itself at a chosen moment of sending: the crash matrix's
process (tests/research/test_research_slow.py), kept out of the package.

    python -m tests.research.kill_at MOMENT:N research INPUT... --field ... (the CLI's arguments)

MOMENT is sent, received or answered, N the count of requests sent so far: the CLI runs as it
does for a user, with `placeflow.runner.research.research`'s `hook` killing the process when the
N-th request reaches MOMENT (the request written ahead as sent, its answer stored as received,
its answer loaded).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from placeflow.cli import research as research_cli
from placeflow.runner import research as research_run
from placeflow.runner import research_due

MOMENTS = ("sent", "received", "answered")


def kill_at(moment: str, count: int) -> Any:
    """A research hook that SIGKILLs this process at `moment` of the `count`-th request."""

    def hook(now: str, sent: int) -> None:
        if now == moment and sent == count:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: python -m tests.research.kill_at MOMENT:N research ARGS...")
    moment, _, count = argv[0].partition(":")
    if moment not in MOMENTS or not count.isdigit():
        raise SystemExit(f"MOMENT:N takes {'|'.join(MOMENTS)}:N, not {argv[0]!r}")
    real = research_run.research
    hook = kill_at(moment, int(count))

    def research(*args: Any, **kwargs: Any) -> Any:
        return real(*args, **kwargs, hook=hook)

    research_due.research = research  # the research command's end calls it from there
    return research_cli.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
