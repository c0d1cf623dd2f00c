"""`python -m placeflow.cli`: the `placeflow` command."""

import os
import sys

from placeflow.cli.main import main

code = main()
if "prefect" in sys.modules:  # its client sends what it holds at exit
    sys.exit(code)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # what was opened is closed and written: the interpreter's teardown is skipped
