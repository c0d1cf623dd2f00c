"""placeflow: bulk place-data ETL against the place-data service, with a faithful sandbox.

`placeflow.run(inputs, target=...)` and `placeflow.resume(run_id, target=...)` are the entry
points (see `placeflow.orchestrate`); they load on first use, so importing the package stays
light and never imports Prefect.

The rule of direction: imports run down these floors, never up (tests/test_layers.py keeps it,
counting lazy and TYPE_CHECKING imports too):

    public face     this package's lazy names (run, resume, preview, ...)
    cli             placeflow.cli: one module per command, args, pre-flight checks, interrupt,
                    live progress; thin: parse, call, print, exit code
    flows           placeflow.flows: Prefect flows that only wire library calls
    entry points    orchestrate, carry, prepare, steps, sender, ending (how a command ends,
                    with or without Prefect), refresh, research/, export, exporters/,
                    reporting/, rows, target, emulator/ (the sandbox): composing stages
    pipeline        placeflow.pipeline: the stages, each a plain typed function
    state           placeflow.state: the one writer of a run's tables, the job lifecycle
    warehouse/api   placeflow.warehouse (DuckDB), placeflow.writer (a run's connection to it),
                    placeflow.api (the service's client)
    base modules    errors, fields, options, config, events, redact, text, diskfull, dbfile:
                    import nothing of placeflow above them
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING

from placeflow.lazy import lazy_names

__version__ = version("placeflow")

if TYPE_CHECKING:
    from placeflow.errors import PlaceflowError
    from placeflow.options import RunOptions
    from placeflow.orchestrate import resume, run
    from placeflow.pipeline.account import RunSummary
    from placeflow.pipeline.source import FileSource, Source
    from placeflow.prepare import Preview, preview
    from placeflow.steps import Step
    from placeflow.target import Target

_LAZY = {
    "run": "placeflow.orchestrate",
    "resume": "placeflow.orchestrate",
    "preview": "placeflow.prepare",
    "Preview": "placeflow.prepare",
    "Step": "placeflow.steps",
    "RunOptions": "placeflow.options",
    "RunSummary": "placeflow.pipeline.account",
    "Source": "placeflow.pipeline.source",
    "FileSource": "placeflow.pipeline.source",
    "Target": "placeflow.target",
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


__getattr__ = lazy_names(__name__, _LAZY)
