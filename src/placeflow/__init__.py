"""placeflow: bulk place-data ETL against the place-data service, with a faithful sandbox.

`placeflow.run(inputs)`, `placeflow.resume(run_id)` and `placeflow.preview(inputs)` are the
entry points (see `placeflow.runner.orchestrate`; docs/operations.md, "The Python API"): without
a `target` or a `db` they take the environment's (`placeflow.config`: the key's service, else an
embedded sandbox; PLACEFLOW_DB). They load on first use, so importing the package stays light
and never imports Prefect.

The rule of direction: imports run down these floors, never up, and two units on one floor
import nothing of each other (tests/test_layers.py keeps it, counting lazy and TYPE_CHECKING
imports too):

    public face     this package's lazy names (run, resume, preview, ...)
    cli             placeflow.cli: one module per command, args, pre-flight checks, interrupt,
                    live progress; thin: parse, call, print, exit code
    flows           placeflow.flows: Prefect flows that only wire library calls
    runner          placeflow.runner: a run's machinery (orchestrate, prepare, carry, sender,
                    steps, ending, target, refresh) and its modes, refresh and research
    reporting       placeflow.reporting: the run report, listings, rows
    exporters and emulator
                    placeflow.exporters (export to Parquet, Delta, PostgreSQL) beside
                    placeflow.emulator (the sandbox)
    pipeline        placeflow.pipeline: the stages, each a plain typed function (research's
                    request kind among them: placeflow.pipeline.research)
    state           placeflow.state: the one writer of a run's tables, the lifecycles
    store and api   placeflow.store: the DuckDB file (warehouse, writer, dbfile, diskfull)
                    beside placeflow.api: the service's client (told before it waits, never
                    told of the warehouse)
    settings        config (the environment, read once) and options
    fields and support
                    fields (the service's field names) beside support (lazy, text, redact)
    base            errors, events: import nothing of placeflow
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import TYPE_CHECKING

from placeflow.support.lazy import lazy_names

__version__ = version("placeflow")

# httpx imports its own command line (httpx._main: click, rich, pygments) whenever click is
# installed, as it is here (through prefect): 0.1 s of every placeflow process, for a command
# placeflow never runs. Marked absent before httpx is first imported, httpx's __init__ takes its
# own fallback (a `main` that asks for httpx[cli]).
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # absent, on purpose

if TYPE_CHECKING:
    from placeflow.errors import PlaceflowError
    from placeflow.options import RunOptions
    from placeflow.pipeline.account import RunSummary
    from placeflow.pipeline.source import FileSource, Source
    from placeflow.runner.orchestrate import resume, run
    from placeflow.runner.prepare import Preview, preview
    from placeflow.runner.steps import Step
    from placeflow.runner.target import Target

_LAZY = {
    "run": "placeflow.runner.orchestrate",
    "resume": "placeflow.runner.orchestrate",
    "preview": "placeflow.runner.prepare",
    "Preview": "placeflow.runner.prepare",
    "Step": "placeflow.runner.steps",
    "RunOptions": "placeflow.options",
    "RunSummary": "placeflow.pipeline.account",
    "Source": "placeflow.pipeline.source",
    "FileSource": "placeflow.pipeline.source",
    "Target": "placeflow.runner.target",
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
