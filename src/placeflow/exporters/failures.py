"""An export stopped by its destination, said in one line: a full disk, a read-only file system
or a destination library's own error, never a traceback or a Rust panic on stderr.

The writers are DuckDB (Parquet), delta-rs (Delta) and the OS. DuckDB raises `duckdb.IOException`
("Could not write file ...: No space left on device"), delta-rs a `DeltaError` carrying the OS's
words ("... (os error 28)") and, from a worker thread of its runtime, prints a panic to stderr
("thread 'tokio-rt-worker' panicked at ...: Already shut down") or raises pyo3's
`PanicException` (a BaseException). `why` reads the reason from any of them;
`rust_panics_kept_off_stderr` keeps the panic's lines from the terminal while delta-rs writes.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from placeflow.store.diskfull import STORAGE_ERRNOS, storage_stop

_WORDS = tuple(os.strerror(code) for code in sorted(STORAGE_ERRNOS))
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
"""Terminal colour codes, which delta-rs's errors carry (one cause a line, each after a red ↳)."""
_PANIC_LINE = re.compile(r"^thread '.*' .*panicked at ")
_PANIC_TAIL = re.compile(r"^(?:stack backtrace:|\s+\d+:|\s+at |note: .*backtrace)")


def is_panic(exc: BaseException) -> bool:
    """Whether `exc` is a Rust panic raised into Python (pyo3's PanicException)."""
    return type(exc).__name__ == "PanicException"


def why(exc: BaseException) -> str:
    """The reason an export's write failed, in one line: the storage problem in the OS's words
    when there is one (with the path when known), else the error's text on one line, without
    terminal colours."""
    stop = storage_stop(exc)
    if stop is not None:
        return str(stop)
    text = str(exc)
    for words in _WORDS:
        if words.lower() in text.lower():
            return words
    flat = " ".join(_COLOURS.sub("", text).replace("\u21b3", ":").split()) or type(exc).__name__
    return f"a Rust panic in the writer ({flat})" if is_panic(exc) else flat


def without_panics(text: str) -> str:
    """`text` (what was written to stderr) less the lines of Rust panics: the "thread ...
    panicked at" line, the message after it and the backtrace's lines."""
    kept: list[str] = []
    skip_message = False
    for line in text.splitlines(keepends=True):
        if _PANIC_LINE.match(line):
            skip_message = True
            continue
        if skip_message:
            skip_message = False
            continue
        if _PANIC_TAIL.match(line):
            continue
        kept.append(line)
    return "".join(kept)


def _flush() -> None:
    if sys.stderr is not None:
        sys.stderr.flush()


@contextmanager
def rust_panics_kept_off_stderr() -> Iterator[None]:
    """For the block, the process's stderr (file descriptor 2, where Rust's panic hook
    writes) goes through a pipe; afterwards what came through is written to stderr less any
    Rust panic (`without_panics`). A thread drains the pipe, so a writer never blocks on it."""
    _flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to keep clean (a daemon's closed descriptor)
        yield
        return
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)

    reader = threading.Thread(target=drain, name="placeflow-stderr", daemon=True)
    reader.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        _flush()
        os.dup2(saved, 2)  # the pipe's last writer closed: the drain ends
        os.close(saved)
        reader.join(timeout=10)
        os.close(read_end)
        shown = without_panics(b"".join(chunks).decode("utf-8", "replace"))
        if shown.strip() and sys.stderr is not None:  # (a panic is preceded by a blank line)
            sys.stderr.write(shown)
            _flush()
