"""A package's names that load their module on first use (PEP 562's module `__getattr__`):
importing the package for one light name (the version, the sandbox's settings for the CLI's
help) does not load the rest."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name of `where` read from its module (the
    value) when first asked for; any other name an AttributeError, as Python raises it."""

    def __getattr__(name: str) -> Any:
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
