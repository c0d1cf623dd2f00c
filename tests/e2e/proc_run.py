"""A run or a refresh in a process of its own, through the library (no Prefect start), against
the service PLACEFLOW_API_KEY / PLACEFLOW_BASE_URL name: what the concurrency tests start
beside each other. Prints the summary as one JSON document (with `exit_code`).

    python -m tests.e2e.proc_run run DB INPUT... [--option NAME=VALUE ...]
    python -m tests.e2e.proc_run refresh DB OLDER_THAN [--option NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def main(argv: list[str]) -> int:
    from placeflow.config import load_settings
    from placeflow.errors import PlaceflowError, RunStopped, exit_code
    from placeflow.options import RunOptions
    from placeflow.reporting.summary import exit_code_for
    from placeflow.runner import orchestrate
    from placeflow.runner.refresh import refresh
    from placeflow.runner.target import open_target

    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("run", "refresh"))
    p.add_argument("db")
    p.add_argument("rest", nargs="+")
    p.add_argument("--option", action="append", default=[])
    args = p.parse_args(argv)
    given: dict[str, Any] = {}
    for pair in args.option:
        name, _, value = pair.partition("=")
        given[name] = json.loads(value) if value[:1] in "0123456789[{tfn-" else value
    options = RunOptions.parse(given)
    settings = load_settings()
    try:
        with open_target(
            api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
        ) as target:
            if args.what == "run":
                summary = orchestrate.run(args.rest, db=args.db, target=target, options=options)
            else:
                summary = refresh(
                    db=args.db, older_than=args.rest[0], target=target, options=options,
                    mode=options.mode,
                )  # fmt: skip
    except PlaceflowError as exc:
        stopped = exc.summary if isinstance(exc, RunStopped) else None
        out = stopped.as_dict() if stopped is not None and hasattr(stopped, "as_dict") else {}
        print(json.dumps({**out, "exit_code": exit_code(exc), "error": str(exc)}, default=str))
        return exit_code(exc)
    code = exit_code_for(summary.status)
    print(json.dumps({**summary.as_dict(), "exit_code": code}, default=str))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
