"""`placeflow rows` and `placeflow query`: argparse wiring (hooked into the CLI by `add_parsers`).

    placeflow rows RUN_ID [--db PATH] --out FILE.csv|FILE.parquet|- [--no-original]
                   [--only DISPOSITION ...] [--json] [-q]
    placeflow query "SQL" [--db PATH] [--json [--nl] | --csv] [--limit N] [-q]

`--out -` writes the rows as CSV to stdout (every row). On a terminal, `query`'s table is cut
to `--limit` rows (said when it cuts) and fits the terminal's width; `--csv` and `--json` are
never cut.

Exit codes: 0 done; 2 no warehouse, no such run, a bad --out name, or SQL that fails.
"""

from __future__ import annotations

import argparse
import shutil
import sys
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
from placeflow.errors import EXIT_OK, EXIT_USAGE, UsageError

DISPOSITIONS = ("submitted", "duplicate", "skipped_fresh", "held_failing", "rejected")
TERMINAL_ROWS = 50
"""The rows of `query`'s table on a terminal unless --limit says otherwise."""
STDOUT = "-"


def add_parsers(sub: Any) -> None:
    """Add the `rows` and `query` sub-commands; each carries its handler (`func`)."""
    rows = sub.add_parser(
        "rows",
        help="write a run's input rows with their outcomes to CSV or Parquet",
        description=(
            "Every input row of the run, in input order: the file's own columns (read from the"
            " file as it is now, when it is still there), then its disposition (submitted,"
            " duplicate, skipped_fresh, held_failing, rejected), the reject reason, its"
            " normalised fields and its place's latest outcome (the run_row_outcomes view)."
        ),
    )
    rows.add_argument("run_id", metavar="RUN_ID")
    add_db(rows)
    rows.add_argument("--out", required=True, metavar="FILE",
                      help="FILE.csv or FILE.parquet, or - for CSV on stdout")  # fmt: skip
    rows.add_argument("--no-original", dest="original", action="store_false",
                      help="leave out the input file's own columns")  # fmt: skip
    rows.add_argument("--only", action="append", choices=DISPOSITIONS, metavar="DISPOSITION",
                      help="only the rows of this disposition (repeatable), e.g. --only"
                      " rejected: " + ", ".join(DISPOSITIONS))  # fmt: skip
    add_json(rows, "print one JSON summary")
    add_quiet(rows)
    rows.set_defaults(func=rows_main)
    q = sub.add_parser(
        "query",
        help="run read-only SQL on the warehouse and print the result",
        description=(
            "Read-only SQL on the warehouse (tables runs, run_rows, rejects, jobs, ...; views"
            " places_latest, run_row_outcomes, run_credits, place_outcomes). No other file is"
            " read or written: read_csv, COPY, ATTACH and EXPORT are refused."
        ),
    )
    q.add_argument("sql", metavar="SQL")
    add_db(q)
    shape = q.add_mutually_exclusive_group()
    add_json(shape, "print the rows as one JSON array (never cut)")
    shape.add_argument("--csv", action="store_true", help="print the rows as CSV (never cut)")
    add_nl(q)
    q.add_argument(
        "--limit", type=int, default=None, metavar="N",
        help=f"rows of the table on a terminal (default {TERMINAL_ROWS}; 0: all); a table"
        " piped elsewhere, --csv and --json are never cut",
    )  # fmt: skip
    add_quiet(q)
    q.set_defaults(func=query_main)


def _table(frame: Any, width: int | None) -> tuple[str, int]:
    """The frame as a table, and how many of its columns it shows: every column, each whole,
    when `width` is None (not a terminal), else as many as fit `width` characters (the rest
    elided)."""
    import polars as pl

    def render(columns: int) -> str:
        with pl.Config(tbl_rows=-1, tbl_cols=columns, fmt_str_lengths=60,
                       tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
                       tbl_width_chars=-1 if width is None else width):  # fmt: skip
            return str(frame)

    columns = frame.width
    table = render(-1)
    while width is not None and columns > 1 and max(map(len, table.splitlines())) > width:
        columns -= 1
        table = render(columns)
    return table, columns


def rows_main(args: argparse.Namespace) -> int:
    from placeflow.reporting.rows import row_outcomes, write_rows
    from placeflow.support.csvsafe import csv_safe

    out = str(args.out)
    try:
        if out != STDOUT and Path(out).suffix.lower() not in (".csv", ".parquet"):
            raise UsageError(f"--out {out}: name a .csv or .parquet file, or - for stdout")
        if out == STDOUT and args.json:
            raise UsageError("--out - prints the rows themselves: leave out --json")
        frame = row_outcomes(args.db, args.run_id, original=args.original, only=args.only)
        if out == STDOUT:  # formulas made inert, as in a file
            sys.stdout.write(csv_safe(frame).write_csv())
            return EXIT_OK
        write_rows(frame, Path(out))
    except UsageError as exc:
        return fail(exc, code=EXIT_USAGE, as_json=args.json)
    counts = dict(frame.group_by("disposition").len().sort("disposition").iter_rows())
    if args.json:
        print_json(result({"out": out, "rows": frame.height, "dispositions": counts}))
    else:
        by = ", ".join(f"{k} {v:,}" for k, v in counts.items())
        say(args, f"{frame.height:,} rows of {args.run_id} written to {out} ({by})")
    return EXIT_OK


def query_main(args: argparse.Namespace) -> int:

    from placeflow.reporting.rows import query
    from placeflow.support.csvsafe import csv_safe

    try:
        if args.nl and args.csv:
            raise UsageError("--nl prints JSON lines: leave out --csv")
        frame = query(args.db, args.sql)
    except UsageError as exc:
        return fail(exc, code=EXIT_USAGE, as_json=args.json or args.nl)
    if args.json or args.nl:
        print_list(frame.to_dicts(), nl=args.nl)
    elif args.csv:  # formulas inert, no control character: as every CSV placeflow writes
        sys.stdout.write(csv_safe(frame).write_csv())
    else:
        terminal = sys.stdout.isatty()
        limit = args.limit if args.limit is not None else (TERMINAL_ROWS if terminal else 0)
        shown = frame.head(limit) if 0 < limit < frame.height else frame
        width = shutil.get_terminal_size().columns if terminal else None
        table, columns = _table(shown, width)
        print(table)
        cut = []
        if shown.height < frame.height:
            cut.append(f"{shown.height:,} of {frame.height:,} rows shown (--limit 0 shows all)")
        if columns < frame.width:
            cut.append(f"{columns:,} of {frame.width:,} columns fit the terminal")
        if cut:
            say(args, f"{'; '.join(cut)}; --csv and --json are never cut", err=True)
    return EXIT_OK
