"""`placeflow refresh`: its argparse wiring and handler (the `refresh_stale_places` flow).

    placeflow refresh --db PATH --older-than DURATION [--mode validate|enrich]
                      [--max-credits N] [--limit N] [--country CC] [--json] [--quiet]

Scripts outside the project rely on this form. The summary is `run`'s, plus the changes the
refresh found (by kind) and the places found changed per credit charged. On a terminal a live
progress display is drawn on stderr, as for `run` (never under --json, --quiet or CI).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from placeflow.report import EXIT_FAILED, EXIT_OK
from placeflow.warehouse import DEFAULT_DB

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State


def add_parsers(sub: Any) -> None:
    """Add `refresh` to the CLI's subparsers (its handler in `func`)."""
    p = sub.add_parser(
        "refresh",
        help="re-check the warehouse's stale places and record what changed",
        description="Select the places of the warehouse whose latest answer is --older-than"
        " old or older (0: all), oldest first, and send them through the same stages as"
        " `run` (estimate first, ledger, resume). With --max-credits smaller than their cost"
        " it takes the places most likely to have changed first, up to the budget. Every"
        " change found is recorded in place_changes.",
    )
    p.add_argument("--db", default=DEFAULT_DB, help=f"DuckDB warehouse (default {DEFAULT_DB})")
    p.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="re-check answers at least this old: 30d, 12h, 90m, or 0 for every place",
    )
    p.add_argument(
        "--mode",
        choices=("validate", "enrich"),
        default="enrich",
        help="validate (existence and status) or enrich (attributes); default enrich",
    )
    p.add_argument(
        "--max-credits",
        type=int,
        default=None,
        metavar="N",
        help="spend at most N credits: the most-likely-changed places first",
    )
    p.add_argument("--limit", type=int, default=None, metavar="N", help="at most N places")
    p.add_argument("--country", default=None, metavar="CC", help="only places of this country")
    p.add_argument("--json", action="store_true", help="print one machine-readable summary")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no live progress display on the terminal"
    )
    p.set_defaults(func=refresh_command)


def refresh_command(args: argparse.Namespace) -> int:
    """Check the arguments, run the flow in this process, print its summary."""
    from placeflow.config import apply_prefect_defaults, in_ci, load_settings
    from placeflow.errors import OptionsError
    from placeflow.refresh import parse_duration

    parse_duration(args.older_than)  # a bad duration is refused before Prefect starts
    for name in ("max_credits", "limit"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            raise OptionsError(f"--{name.replace('_', '-')} must be 0 or more")
    load_settings()
    apply_prefect_defaults()
    from flows.refresh import refresh_stale_places  # Prefect loads only for runs
    from placeflow.progress import ProgressDisplay, wanted

    show = wanted(sys.stderr, quiet=args.quiet, as_json=args.json, ci=in_ci())
    with ProgressDisplay(title="placeflow refresh", enabled=show) as display:
        # the display is an in-process callback: Prefect stores a placeholder for it
        state: State[Any] = refresh_stale_places(  # type: ignore[assignment]
            db=args.db,
            older_than=args.older_than,
            mode=args.mode,
            max_credits=args.max_credits,
            limit=args.limit,
            country=args.country,
            on_event=display if show else None,
            return_state=True,
        )
    data = state.result(raise_on_failure=False)
    if not isinstance(data, dict):
        print(f"placeflow: the refresh failed: {state.message or data}", file=sys.stderr)
        return EXIT_FAILED
    return print_outcome(data, as_json=args.json)


def print_outcome(data: dict[str, Any], *, as_json: bool) -> int:
    from placeflow.pipeline.account import RunSummary
    from placeflow.report import text_summary

    code = int(data.pop("exit_code", EXIT_OK))
    if as_json:
        print(json.dumps({**data, "exit_code": code}, sort_keys=True, default=str))
    elif "run_id" in data:
        print(text_summary(RunSummary(**data)))
    else:
        print(f"placeflow: {data.get('message') or data.get('status')}", file=sys.stderr)
    return code
