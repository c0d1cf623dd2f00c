"""`placeflow report` and `placeflow runs`: their argparse wiring and handlers.

`add_parsers(sub)` adds both subcommands to the CLI's subparsers; each handler takes the
parsed arguments and returns an exit code (0, or 2 for a missing run or warehouse).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from placeflow.cli.args import add_db, add_json
from placeflow.errors import EXIT_OK, EXIT_USAGE, UnknownRun, exit_code
from placeflow.store.warehouse import READ_WAIT, connect
from placeflow.support.text import printable


def add_parsers(sub: Any) -> None:
    """Add `report` and `runs` to the CLI's subparsers (their handler in `func`)."""
    report = sub.add_parser(
        "report",
        help="write a run's report as one self-contained HTML file",
        description="Write the report of RUN_ID: its funnel, outcomes, credits, timeline,"
        " changes and map, as one HTML file that opens offline (inline SVG charts, no script).",
    )
    report.add_argument("run_id", metavar="RUN_ID")
    add_db(report)
    report.add_argument(
        "--out", default=None, metavar="PATH", help="where to write it (default report-RUN_ID.html)"
    )
    add_json(report, "print where it went as JSON")
    report.set_defaults(func=report_command)
    runs = sub.add_parser(
        "runs",
        help="recent runs: status, rows, credits, duration, changes",
        description="List recent runs, newest first, with their status, rows, outcomes,"
        " credits (estimated, charged, the service's usage delta), duration and changes.",
    )
    add_db(runs)
    runs.add_argument("--limit", type=int, default=20, help="how many runs (default 20)")
    add_json(runs, "print one JSON document (a list)")
    runs.set_defaults(func=runs_command)


def report_command(args: argparse.Namespace) -> int:
    """Write the report; exit 2 when the warehouse or the run does not exist."""
    from placeflow.reporting import write_report

    db = Path(args.db)
    if not db.exists():
        print(f"placeflow: no warehouse at {db}: a run creates it", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out) if args.out else Path(f"report-{args.run_id}.html")
    try:
        with connect(db, read_only=True, wait=READ_WAIT) as con:  # a run writes for moments
            info = write_report(con, args.run_id, out)
    except UnknownRun as exc:
        print(printable(f"placeflow: {exc}"), file=sys.stderr)
        return exit_code(exc) or EXIT_USAGE
    if args.json:
        print(
            json.dumps(
                {
                    "run_id": info.run_id,
                    "path": str(info.path),
                    "bytes": info.bytes,
                    "sections": list(info.sections),
                }
            )
        )
    else:
        print(f"report of {info.run_id} written to {info.path} ({info.bytes / 1024:,.0f} KiB)")
    return EXIT_OK


def runs_command(args: argparse.Namespace) -> int:
    """Print the newest runs as a table, or as one JSON list with --json."""
    from placeflow.reporting.listing import format_runs, runs_json_rows, runs_table

    db = Path(args.db)
    if not db.exists():
        if args.json:
            print("[]")
        else:
            print(f"no runs yet: {db} does not exist")
        return EXIT_OK
    with connect(db, read_only=True, wait=READ_WAIT) as con:  # a run writes for moments
        rows = runs_table(con, args.limit)
    if args.json:
        print(json.dumps(runs_json_rows(rows), default=str))
    elif rows:
        print(format_runs(rows))
    else:
        print(f"no runs yet in {db}")
    return EXIT_OK
