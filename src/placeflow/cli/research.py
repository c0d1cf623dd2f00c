"""`placeflow research`: argparse wiring and the handler; the library does the work.

Hook it into the CLI with `research_cli.add_parser(sub)` beside the other commands and, in
dispatch, `if args.command == "research": return research_cli.handle(args)`. It also runs alone:
`python -m placeflow.cli.research research INPUT... --field ...`.

    placeflow research INPUT... --field NAME[:TYPE[:A|B]] ... [--json]
    placeflow research --from-warehouse [--older-than D] [--country CC] [--limit N] --field ...

`--from-warehouse` researches the places runs already loaded into `--db` (refresh's selection,
`placeflow.runner.refresh.WarehouseSource`; `--older-than 0`, the default, takes them all) whose
research is older than `--max-age` (`placeflow.runner.research_due.due_source`: `--limit` counts
places due), so no file is needed. On a terminal a live display (`placeflow.cli.progress`)
follows the research's events on stderr; `--json` prints exactly one JSON document on stdout,
notices on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from placeflow.cli.args import add_db, add_json, add_quiet, fail, one_command, print_json
from placeflow.config import apply_prefect_defaults, in_ci, load_settings, prefect_server_url
from placeflow.errors import (
    EXIT_OK,
    EXIT_USAGE,
    PlaceflowError,
    RunInProgress,
    UsageError,
    exit_code,
)
from placeflow.options import DURATION_HELP, RunOptions, duration_days
from placeflow.support.text import printable

if TYPE_CHECKING:  # the research library loads when the command runs, not for its parser
    from placeflow.cli.carried import OnEvent
    from placeflow.flows.prefect_events import PrefectEvents
    from placeflow.pipeline.research.plan import ResearchSpec
    from placeflow.pipeline.source import Source


PROG = "placeflow research"
"""How its errors begin on stderr."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "research",
        help="deep research: caller-defined attributes of many places, estimated and capped",
        description="Research caller-defined attributes (POST /v1/deep-research) of the places"
        " in the inputs: read, normalise, dedupe, skip places with fresh answers, estimate from"
        " the rate card, refuse over --max-credits, send requests of 10 places with their state"
        " written ahead (never paying twice), load the answers into research_answers. The same"
        " command resumes a run that stopped.",
        epilog="exit codes: 0 done; 1 stopped part way (rerun the same command); 2 bad"
        " arguments or input; 3 refused before spending (budget, balance, field policy) or"
        " stopped when the budget or credits ran out",
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="CSV or Parquet files, or globs")
    read = RunOptions.model_fields
    p.add_argument(
        "--map", dest="mapping", action="append", default=[], metavar="[FILE:]FIELD=COLUMN",
        help=read["mapping"].description,
    )  # fmt: skip
    p.add_argument("--encoding", metavar="ENC", help=read["encoding"].description)
    p.add_argument("--separator", metavar="CHAR", help=read["separator"].description)
    p.add_argument(
        "--from-warehouse",
        action="store_true",
        help="research the places already in the --db warehouse (no INPUT): refresh's selection",
    )
    p.add_argument(
        "--older-than",
        default="0",
        metavar="DURATION",
        help="with --from-warehouse: only places whose latest answer is this old: a duration,"
        f" {DURATION_HELP} (default 0: all)",
    )
    p.add_argument("--country", metavar="CC", help="with --from-warehouse: only this country")
    p.add_argument(
        "--limit", type=int, metavar="N",
        help="with --from-warehouse: at most N places due (research older than --max-age)",
    )  # fmt: skip
    p.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="NAME[:TYPE[:A|B|...]]",
        help="an attribute to research (repeatable); TYPE bool, enum, string or number",
    )
    p.add_argument(
        "--describe",
        action="append",
        default=[],
        metavar='NAME="..."',
        help="a description of a field, at most 500 characters (repeatable)",
    )
    p.add_argument("--fields", metavar="FILE", help="attribute specs from a YAML or JSON file")
    p.add_argument("--verify-identity", action="store_true", help="verify name and address first")
    p.add_argument(
        "--validate-existence", action="store_true", help="add an existence answer per place"
    )
    p.add_argument("--sample", type=int, metavar="N", help="research only the first N places")
    p.add_argument(
        "--max-credits", type=int, metavar="N", help="the run's budget; refused if over it"
    )
    p.add_argument("--estimate", action="store_true", help="print the estimate, spend nothing")
    p.add_argument("--max-age", type=_days, default=30.0, metavar="DURATION",
                   help=f"answers younger than this are not bought again: {DURATION_HELP}"
                   " (default 30d)")  # fmt: skip
    p.add_argument("--force", action="store_true", help="research fresh places again")
    p.add_argument(
        "--resend-uncertain",
        action="store_true",
        help="send again requests that may have been billed without an answer",
    )
    p.add_argument(
        "--shared-key",
        action="store_true",
        help="the key is used by others too: a lost answer is held uncertain, never"
        " judged from the usage delta",
    )
    add_db(p)
    add_json(p)
    add_quiet(p)
    p.set_defaults(func=handle)
    return p


def _days(text: str) -> float:
    """`--max-age`: a duration in days (argparse says a bad one as a usage error)."""
    try:
        return duration_days(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _source(args: argparse.Namespace, spec: ResearchSpec) -> Sequence[str] | Source:
    """The files given, or (--from-warehouse) the warehouse's places that are due
    (`placeflow.runner.research_due.due_source`, the research flow's selection too)."""
    from placeflow.pipeline.research.fields import FieldSpecError
    from placeflow.runner.research_due import due_source

    if not args.from_warehouse:
        if not args.inputs:
            raise FieldSpecError("give INPUT files, or --from-warehouse")
        return list(args.inputs)
    if args.inputs:
        raise FieldSpecError("give INPUT files or --from-warehouse, not both")
    if args.mapping or args.encoding or args.separator:
        raise FieldSpecError(
            "--map, --encoding and --separator read INPUT files, not the warehouse"
        )
    return due_source(
        args.db, spec=spec, max_age=timedelta(days=args.max_age),
        answered_older_than=args.older_than, country=args.country, limit=args.limit,
        force=args.force,
    )  # fmt: skip


def handle(args: argparse.Namespace) -> int:
    from placeflow.cli.progress import ProgressDisplay, wanted
    from placeflow.pipeline.research.fields import FieldSpecError, build_specs
    from placeflow.pipeline.research.plan import ResearchSpec
    from placeflow.runner.research import ResearchOptions, estimate, read_options
    from placeflow.runner.research_due import ended_research, research_ending, unpublished
    from placeflow.runner.target import open_target

    quiet = getattr(args, "quiet", False)
    show = wanted(sys.stderr, quiet=quiet, as_json=args.json, ci=in_ci())

    try:
        if args.sample is not None and args.sample < 1:
            raise FieldSpecError("--sample takes N >= 1")
        if args.max_credits is not None and args.max_credits < 0:
            raise FieldSpecError("--max-credits takes N >= 0")
        specs = build_specs(args.field, args.describe, args.fields)
        options = ResearchOptions(
            spec=ResearchSpec(specs, args.verify_identity, args.validate_existence),
            run=read_options(
                args.mapping, args.encoding, args.separator, max_credits=args.max_credits,
                max_age_days=args.max_age, force=args.force,
                resend_uncertain=args.resend_uncertain,
            ),
            sample=args.sample,
            exclusive_key=not args.shared_key,
            estimate_only=args.estimate,
        )  # fmt: skip
        source = _source(args, options.spec)
        settings = load_settings()
    except (UsageError, ValueError) as exc:  # FieldSpecError, OptionsError, InputError, ...
        return fail(exc, code=exit_code(exc) or EXIT_USAGE, as_json=args.json, prog=PROG)
    service = partial(
        open_target, api_key=settings.api_key, base_url=settings.base_url,
        limits=settings.limits, db=args.db,
    )  # fmt: skip
    try:
        with ProgressDisplay(title="placeflow research", enabled=show) as display:
            shows = display if show else None
            if args.estimate:
                with service() as target:
                    out = estimate(source, options, target=target, db=args.db, on_event=shows)
                return _print(out, as_json=args.json)
            told = prefect_events(args.db, forward=shows)
            outcome = ended_research(
                research_ending(unpublished), service=service, source=source, options=options,
                db=args.db, on_event=told or shows, raised=(RunInProgress,),
            )  # fmt: skip
            if told is not None:  # its end told too, and every event sent before the exit
                told.ended(outcome.data)
    except (PlaceflowError, FileNotFoundError) as exc:  # codes by class: errors.EXIT_CODES
        return fail(exc, code=exit_code(exc) or EXIT_USAGE, as_json=args.json, prog=PROG)
    out = outcome.data
    if "run_id" not in out and out["exit_code"] != EXIT_OK:  # stopped before it was recorded
        return fail(str(out["message"]), code=out["exit_code"], as_json=args.json, prog=PROG)
    return _print(out, as_json=args.json)


def prefect_events(db: str, *, forward: OnEvent) -> PrefectEvents | None:
    """With a Prefect server configured (PREFECT_API_URL), the research's facts told to it as a
    run's are (`flows.prefect_events`), each passed on to `forward`; else None, and nothing of
    Prefect is imported."""
    if prefect_server_url() is None:
        return None
    apply_prefect_defaults()
    from placeflow.flows.prefect_events import PrefectEvents

    return PrefectEvents(db, kind="research", forward=forward)


def _print(out: dict[str, Any], *, as_json: bool) -> int:
    """A research's end: its summary (the run's, `RunSummary.as_dict` with its exit code) or
    its estimate, as one JSON document or as text (a summary as a run's reads,
    `placeflow.reporting.summary.text_summary`, its message on stderr too when it did not end
    well)."""
    from placeflow.pipeline.account import RunSummary
    from placeflow.reporting.summary import text_summary

    code = int(out["exit_code"])
    for warning in out.get("budget_warnings") or []:
        print(printable(f"placeflow research: warning: {warning}"), file=sys.stderr)
    if as_json:
        print_json(out)
        return code
    if "run_id" in out:
        print(text_summary(RunSummary.from_dict(out)))
        if code and out.get("message"):
            print(printable(f"{PROG}: {out['message']}"), file=sys.stderr)
        return code
    print(printable(f"research estimate: {out['status']} against {out['target']}"))
    for name, value in out.items():
        if name not in ("status", "target", "message", "exit_code") and value is not None:
            shown = f"{value:,}" if isinstance(value, int) else str(value)
            print(printable(f"  {name.replace('_', ' '):<24} {shown}"))
    if out.get("message"):
        print(printable(f"  {out['message']}"), file=sys.stderr if code else sys.stdout)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m placeflow.cli.research research ...`, the same as `placeflow research ...`."""
    return one_command(add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
