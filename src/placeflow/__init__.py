"""placeflow: bulk place-data ETL against the place-data service, with a faithful sandbox.

`placeflow.run(inputs, target=...)` and `placeflow.resume(run_id, target=...)` are the entry
points (see `placeflow.orchestrate`); they load on first use, so importing the package stays
light and never imports Prefect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from placeflow.errors import PlaceflowError
    from placeflow.options import RunOptions
    from placeflow.orchestrate import resume, run
    from placeflow.pipeline.account import RunSummary
    from placeflow.pipeline.read import FileSource, Source
    from placeflow.prepare import Preview, preview
    from placeflow.service import Target
    from placeflow.steps import Step

_LAZY = {
    "run": "placeflow.orchestrate",
    "resume": "placeflow.orchestrate",
    "preview": "placeflow.prepare",
    "Preview": "placeflow.prepare",
    "Step": "placeflow.steps",
    "RunOptions": "placeflow.options",
    "RunSummary": "placeflow.pipeline.account",
    "Source": "placeflow.pipeline.read",
    "FileSource": "placeflow.pipeline.read",
    "Target": "placeflow.service",
    "PlaceflowError": "placeflow.errors",
}

__all__ = [
    "FileSource",
    "PlaceflowError",
    "Preview",
    "RunOptions",
    "RunSummary",
    "Source",
    "Step",
    "Target",
    "__version__",
    "preview",
    "resume",
    "run",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'placeflow' has no attribute {name!r}")
