"""`placeflow report` and `placeflow runs`: their argparse wiring and handlers.

`add_parsers(sub)` adds both subcommands to the CLI's subparsers; each handler takes the
parsed arguments and returns an exit code (0, or 2 for a missing run or warehouse).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from placeflow.cli.args import (
    add_db,
    add_json,
    add_nl,
    add_quiet,
    fail,
    print_json,
    print_list,
    result,
    say,
)
from placeflow.errors import EXIT_OK, EXIT_USAGE, NoWarehouse
from placeflow.store.warehouse import READ_WAIT, connect


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
    add_quiet(report)
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
    add_nl(runs)
    add_quiet(runs)
    runs.set_defaults(func=runs_command)


def report_command(args: argparse.Namespace) -> int:
    """Write the report; exit 2 when the warehouse or the run does not exist."""
    from placeflow.reporting import write_report

    db = Path(args.db)
    if not db.exists():  # UnknownRun and the rest are said by the one error exit
        return fail(NoWarehouse(f"no warehouse at {db}: a run creates it"), as_json=args.json,
                    code=EXIT_USAGE)  # fmt: skip
    out = Path(args.out) if args.out else Path(f"report-{args.run_id}.html")
    with connect(db, read_only=True, wait=READ_WAIT) as con:  # a run writes for moments
        info = write_report(con, args.run_id, out)
    if args.json:
        print_json(result({"run_id": info.run_id, "path": str(info.path), "bytes": info.bytes,
                           "sections": list(info.sections)}))  # fmt: skip
    else:
        say(args, f"report of {info.run_id} written to {info.path} ({info.bytes / 1024:,.0f} KiB)")
    return EXIT_OK


def runs_command(args: argparse.Namespace) -> int:
    """Print the newest runs as a table, or as one JSON list with --json."""
    from placeflow.reporting.listing import format_runs, runs_json_rows, runs_table

    db = Path(args.db)
    if not db.exists():
        if args.json or args.nl:
            print_list([], nl=args.nl)
        else:
            print(f"no runs yet: {db} does not exist")
        return EXIT_OK
    with connect(db, read_only=True, wait=READ_WAIT) as con:  # a run writes for moments
        rows = runs_table(con, args.limit)
    if args.json or args.nl:
        print_list(runs_json_rows(rows), nl=args.nl)
    elif rows:
        print(format_runs(rows))
    else:
        print(f"no runs yet in {db}")
    return EXIT_OK
