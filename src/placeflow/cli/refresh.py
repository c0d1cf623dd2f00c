"""`placeflow refresh`: its argparse wiring and handler (the `refresh_stale_places` flow).

    placeflow refresh --db PATH --older-than DURATION [--mode validate|enrich]
                      [--max-credits N] [--limit N] [--country CC] [--json] [--quiet]
                      [--resend-uncertain] [--stuck-after S] [--idempotency-window S]
                      [--claim-wait S] [--prefect]

Scripts outside the project rely on this form. The summary is `run`'s, plus the changes the
refresh found (by kind) and the places found changed per credit charged. On a terminal a live
progress display is drawn on stderr, as for `run` (never under --json, --quiet or CI).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from placeflow.cli.args import add_db, add_json, add_quiet
from placeflow.cli.carried import add_prefect, carried, watched
from placeflow.cli.run import print_outcome
from placeflow.errors import EXIT_FAILED
from placeflow.options import DURATION_HELP, RunOptions
from placeflow.support.text import printable

if TYPE_CHECKING:
    from placeflow.events import Event
    from placeflow.runner.ending import Outcome


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
    add_db(p)
    p.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help=f"re-check answers at least this old: {DURATION_HELP}; 0 for every place",
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
    for name in ("resend_uncertain", "stuck_after", "idempotency_window", "claim_wait"):
        field = RunOptions.model_fields[name]
        flag = "--" + name.replace("_", "-")
        if field.annotation is bool:
            p.add_argument(flag, action="store_true", help=field.description)
        else:
            p.add_argument(flag, type=float, default=None, metavar="SECONDS",
                           help=field.description)  # fmt: skip
    add_json(p)
    add_quiet(p)
    add_prefect(p)
    p.set_defaults(func=refresh_command)


def refresh_command(args: argparse.Namespace) -> int:
    """Check the arguments, carry the refresh out in this process (as a flow run under
    Prefect when asked or configured), print its summary."""
    from placeflow.config import load_settings
    from placeflow.errors import OptionsError
    from placeflow.options import parse_duration

    parse_duration(args.older_than)  # a bad duration is refused before the refresh starts
    for name in ("max_credits", "limit"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            raise OptionsError(f"--{name.replace('_', '-')} must be 0 or more")
    settings = load_settings()
    params = {
        "db": args.db,
        "older_than": args.older_than,
        "mode": args.mode,
        "max_credits": args.max_credits,
        "limit": args.limit,
        "country": args.country,
    }
    tuning = {
        "resend_uncertain": args.resend_uncertain,
        "stuck_after": args.stuck_after,
        "idempotency_window": args.idempotency_window,
        "claim_wait": args.claim_wait,
        "watch_every": watched(args, settings),
    }

    def flow() -> Callable[..., Any]:
        from placeflow.flows.refresh import refresh_stale_places

        return refresh_stale_places

    def local(on_event: Callable[[Event], None] | None) -> Outcome:
        from placeflow.reporting.published import write_files
        from placeflow.runner.ending import open_service, refresh_ending, refresh_outcome
        from placeflow.runner.steps import direct

        return refresh_outcome(
            refresh_ending(write_files), service=lambda: open_service(settings, db=args.db),
            step=direct, on_event=on_event, tuning=tuning, **params,
        )  # fmt: skip

    data, message = carried(
        args, settings, title="placeflow refresh", flow=flow, params={**params, **tuning},
        local=local,
    )  # fmt: skip
    if not isinstance(data, dict):
        print(printable(f"placeflow: the refresh failed: {message or data}"), file=sys.stderr)
        return EXIT_FAILED
    return print_outcome(data, as_json=args.json, quiet=args.quiet)
