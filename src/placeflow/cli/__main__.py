"""`python -m placeflow.cli`: the `placeflow` command."""

import sys

from placeflow.cli.main import main

sys.exit(main())
