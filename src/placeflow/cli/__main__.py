"""`python -m placeflow.cli`: the `placeflow` command."""

import gc
import os
import sys

from placeflow.support import lazy

lazy.FREEZE = True  # this process's imports live as long as it: frozen, never scanned again
with lazy.collector_paused():  # (a full collection of their objects took 20-28 ms)
    from placeflow.cli.main import main

try:
    code = main()
except BaseException:  # --help, --version, a usage error: the interpreter's teardown follows,
    gc.unfreeze()  # which must reach what the freeze kept out of it (DuckDB's objects among it)
    raise
if "prefect" in sys.modules:  # its client sends what it holds at exit
    gc.unfreeze()  # (the teardown as above)
    sys.exit(code)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # what was opened is closed and written: the interpreter's teardown is skipped
