"""A run stopped by its storage: the disk (or quota) of the warehouse or of its work directory
is full, or the file system is read-only.

Such an error is not placeflow's own (the OS or DuckDB raises it, from whichever write came
first), so it is told by what it says: an `OSError` with one of `STORAGE_ERRNOS`, or a DuckDB
error whose text carries the OS's words for one. Every write that costs money is recorded
before it is made, so a run stopped this way is a run stopped part way, as a crash leaves it:
once space is freed, `placeflow resume RUN_ID` (or the same command, when the run was never
recorded) finishes it without paying twice.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
"""No space left, quota exceeded, read-only file system, file too large."""
_WORDS = {code: os.strerror(code) for code in STORAGE_ERRNOS}


@dataclass(frozen=True)
class StorageStop:
    """Why the storage stopped a run, in the OS's words, and where when it is known."""

    reason: str
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.reason} ({self.path})" if self.path else self.reason


def storage_stop(exc: BaseException) -> StorageStop | None:
    """The storage problem `exc` (or an error it was raised from) reports; None for others."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in STORAGE_ERRNOS:
            where = current.filename
            return StorageStop(_WORDS[current.errno], None if where is None else str(where))
        text = str(current)
        for code, words in _WORDS.items():
            if words.lower() in text.lower() and _is_duckdb(current):
                return StorageStop(_WORDS[code], _quoted_path(text))
        current = current.__cause__ or current.__context__
    return None


def _is_duckdb(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0].lstrip("_") == "duckdb"


def _quoted_path(text: str) -> str | None:
    """The first double-quoted path of a DuckDB message ('Could not write file "/x.wal": ...')."""
    _, quote, rest = text.partition('"')
    path, end, _ = rest.partition('"')
    return path if quote and end and path.startswith(("/", ".")) else None


def stop_message(stop: StorageStop, run_id: str | None, db: str) -> str:
    """What the user reads: what happened, that the state is kept, the command that finishes."""
    if run_id is None:
        return (
            f"the run stopped before it was recorded: {stop}; nothing was sent. Free space"
            " (or choose a writable --db), then run the same command again"
        )
    return (
        f"run {run_id} stopped: {stop}. What was sent is recorded; free space (or move the"
        f" warehouse to a writable place), then `placeflow resume {run_id} --db {db}` finishes"
        " it without paying twice"
    )
