"""`python -m placeflow.cli`: the `placeflow` command."""

import os
import sys

from placeflow.support import lazy

lazy.FREEZE = True  # this process's imports live as long as it: frozen, never scanned again
with lazy.collector_paused():  # (a full collection of their objects took 20-28 ms)
    from placeflow.cli.main import main

code = main()
if "prefect" in sys.modules:  # its client sends what it holds at exit
    sys.exit(code)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # what was opened is closed and written: the interpreter's teardown is skipped
