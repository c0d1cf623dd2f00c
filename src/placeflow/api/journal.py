"""A key's spend journal, shared by every process of this machine that uses the key: which runs
have spend in flight on it, and when.

The service's `current_usage` counts what every user of a key spent. A run that reads a usage
delta to judge its own lost answers, or to balance its ledger, may take it for its own only when
no other run could have moved it meanwhile: `others` names the runs whose spend was in flight
at some moment of a span. A run is *active* from its first request that may cost credits until
nothing of it is left in flight (every job settled, every answer had); a run that stops with a
job still running at the service stays active (its hold may still be released) until a resume
settles it, whichever process that is. What is unknown counts as in flight: an active run of a
process that died stays active.

The journal is a small JSON file beside the key's rate-limit window (`state_dir`, named by the
same digest of key and service, never the key), read and written under an exclusive `flock`.
Times are the machine's wall clock (epoch seconds), the one clock every process shares.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

KEEP = 7 * 86400.0
"""Seconds a closed span is kept (a judgement looks back over one run's life at most)."""

Spans = dict[str, dict[str, Any]]
"""run_id -> {"pid", "host", "spans": [[since, until or None], ...]}."""


class SpendJournal:
    """The journal of one key (see the module); `clock` is wall time, injectable for tests."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock

    @contextmanager
    def _held(self) -> Iterator[Spans]:
        """The journal's contents, locked for the block and written back after it."""
        lock = self.path.with_suffix(".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                runs: Spans = json.loads(self.path.read_text())
            except (OSError, ValueError):
                runs = {}
            yield runs
            now = self.clock()
            for run_id in list(runs):
                spans = [s for s in runs[run_id]["spans"] if s[1] is None or now - s[1] < KEEP]
                if spans:
                    runs[run_id]["spans"] = spans
                else:
                    del runs[run_id]
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(runs))
            os.replace(tmp, self.path)
        finally:
            os.close(fd)  # closing lets go of the lock, also when a process dies

    def active(self, run_id: str) -> None:
        """`run_id` may spend from now (a span opens, unless one is open already)."""
        with self._held() as runs:
            entry = runs.setdefault(run_id, {"spans": []})
            entry.update(pid=os.getpid(), host=socket.gethostname())
            if not entry["spans"] or entry["spans"][-1][1] is not None:
                entry["spans"].append([self.clock(), None])

    def settled(self, run_id: str) -> None:
        """Nothing of `run_id` is in flight any more (its open span closes now)."""
        with self._held() as runs:
            entry = runs.get(run_id)
            if entry and entry["spans"] and entry["spans"][-1][1] is None:
                entry["spans"][-1][1] = self.clock()

    def others(self, run_id: str, since: float, until: float | None = None) -> list[str]:
        """The other runs whose spend was in flight at some moment from `since` to `until`
        (now when None): a usage delta over that span is not `run_id`'s alone."""
        end = self.clock() if until is None else until
        with self._held() as runs:
            return sorted(
                other
                for other, entry in runs.items()
                if other != run_id
                and any(s[0] <= end and (s[1] is None or s[1] >= since) for s in entry["spans"])
            )
