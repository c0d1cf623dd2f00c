"""A package's names that load their module on first use (PEP 562's module `__getattr__`):
importing the package for one light name (the version, the sandbox's settings for the CLI's
help) does not load the rest."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name of `where` read from its module (the
    value) when first asked for; any other name an AttributeError, as Python raises it."""

    def __getattr__(name: str) -> Any:
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


FREEZE = False
"""Whether what a `collector_paused` block leaves alive is frozen (`gc.freeze`: never scanned
again). Set by a process's entry point alone (`python -m placeflow.cli`), never by a library
call: a frozen object that later dies in a cycle is never collected, so only a process whose
frozen objects are its modules' may."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """The block (a command's imports: objects that live as long as the process) runs with the
    garbage collector paused, on again after it if it was before, and what is alive after it
    is frozen where the process says so (FREEZE). Paused without a freeze, the first
    collections after the block scan all it made, as they would have during it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if FREEZE:
            gc.freeze()
        if was:
            gc.enable()
