"""`python -m placeflow.cli`: the `placeflow` command."""

import gc
import os
import sys

gc.disable()  # the imports make objects that live as long as the process: no cycles to find
from placeflow.cli.main import main  # noqa: E402 - after the collector is paused

gc.freeze()  # those objects are never scanned again (a full collection of them took 20-28 ms)
gc.enable()
code = main()
if "prefect" in sys.modules:  # its client sends what it holds at exit
    sys.exit(code)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # what was opened is closed and written: the interpreter's teardown is skipped
