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
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from placeflow.cli.args import add_db, add_json, add_quiet
from placeflow.cli.carried import add_prefect, carried, watched
from placeflow.cli.run import print_outcome
from placeflow.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from placeflow.options import DURATION_HELP, RunOptions
from placeflow.support.text import printable

if TYPE_CHECKING:
    from placeflow.config import Settings
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
    p.add_argument(
        "--estimate",
        action="store_true",
        help="price the refresh (the places it would re-check, within --max-credits and the"
        " warehouse's budgets, and the most they could cost), sending nothing",
    )
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
    if args.estimate:
        return estimate_refresh(args, settings)
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
            refresh_ending(write_files),
            service=lambda: open_service(settings, db=args.db, quiet=args.quiet),
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


def estimate_refresh(args: argparse.Namespace, settings: Settings) -> int:
    """`refresh --estimate`: the refresh's selection (stale places within --max-credits and
    the budgets for refresh) read, normalised and planned as the refresh would, sending nothing
    and writing nothing; exit 3 when the refresh would be refused (the key's balance)."""
    from placeflow.runner.prepare import preview
    from placeflow.runner.refresh import refresh_plan
    from placeflow.runner.target import open_target

    with open_target(
        api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits, db=args.db
    ) as target:
        chosen, source = refresh_plan(
            db=args.db, older_than=args.older_than, target=target, mode=args.mode,
            max_credits=args.max_credits, limit=args.limit, country=args.country,
        )  # fmt: skip
        seen = preview(source, options=chosen, db=args.db, target=target)
    e, code = seen.estimate, EXIT_REFUSED if seen.refusal else EXIT_OK
    warnings = list(seen.stages["read"].warnings)
    out = {
        "places": seen.rows_read, "skipped_fresh": seen.skipped_fresh, "to_send": seen.to_send,
        "route": e.route, "credits_at_most": e.credits, "credits_per_place": e.credits_per_place,
        "requests_at_least": e.requests, "budget_left": source.budget if source.budget_said
        else None, "budget": source.budget_said, "warnings": warnings, "message": seen.refusal,
        "status": "refused" if code else "estimated", "exit_code": code,
    }  # fmt: skip
    for line in [*warnings, *([f"would be refused: {seen.refusal}"] if seen.refusal else [])]:
        print(printable(f"placeflow: {line}"), file=sys.stderr)
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return code
    print(f"refresh estimate of {args.db} (nothing sent, nothing spent):")
    for name in ("places", "skipped_fresh", "to_send", "route", "credits_at_most",
                 "requests_at_least"):  # fmt: skip
        value = out[name]
        shown = f"{value:,}" if isinstance(value, int) else str(value)
        print(f"  {name.replace('_', ' '):<20} {shown}")
    if source.budget_said:
        print(printable(f"  {source.budget_said} leaves {source.budget:,} credits for it"))
    return code
