"""The `placeflow` command: parse, build config, call the library, map errors to exit codes."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence

from placeflow import (
    commands,
    export_cli,
    match_cli,
    refresh_cli,
    report_cli,
    research_cli,
    rows_cli,
)
from placeflow.api.text import printable
from placeflow.emulator import FaultConfig, Sandbox, SandboxConfig, parse_key_spec
from placeflow.emulator.settings import DEFAULT_API_KEY, DEFAULT_CREDITS, KeySpec
from placeflow.errors import OptionsError, PlaceflowError
from placeflow.report import EXIT_FAILED, EXIT_OK, error_document, exit_code

EPILOG = (
    "exit codes: 0 success; 1 the run failed or stopped part way, a full disk too (see its "
    "message; `placeflow resume RUN_ID` finishes it); 2 bad arguments, unreadable input or a "
    "--db that cannot be written; 3 refused before spending (over --max-credits or the key's "
    "balance) or stopped when credits ran out; 130 stopped by Ctrl-C (`placeflow resume "
    "RUN_ID` finishes it; a second Ctrl-C, or --cancel-on-interrupt, also cancels the "
    "submitted jobs)"
)


def _fault_settings(pairs: Sequence[str]) -> FaultConfig:
    values: dict[str, float | int | bool] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise OptionsError(f"--fault takes name=value, not {pair!r}")
        if name == "research_unavailable":
            values[name] = value.lower() in ("1", "true", "yes")
        elif name in ("seed", "retry_after_seconds"):
            values[name] = int(value)
        else:
            values[name] = float(value)
    return FaultConfig.from_dict(values)


def _sandbox_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sandbox",
        help="serve the sandbox emulator of the place-data service on loopback",
        description="Serve the sandbox emulator: the API on --port, result files on --files-port. "
        f"Without --key it accepts one paid key, {DEFAULT_API_KEY}, with "
        f"{DEFAULT_CREDITS:,} credits.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8787, help="API port (default 8787)")
    p.add_argument(
        "--files-port",
        type=int,
        default=0,
        help="result-file port, a second origin (default: any free port)",
    )
    p.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="NAME:tier=free|paid:credits=N",
        help="a key to accept (repeatable); options entitlements=a,b and status=",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of outcomes and faults")
    p.add_argument("--epoch", type=int, default=0, help="a later epoch changes a few outcomes")
    p.add_argument(
        "--rows-per-second",
        type=float,
        default=None,
        help="rows each running job processes per second (default: at once)",
    )
    p.add_argument("--max-running-jobs", type=int, default=2, help="running jobs per key")
    p.add_argument(
        "--rate-window-scale",
        type=float,
        default=1.0,
        help="multiply the rate-limit windows (0.05: the minute lasts 3 s)",
    )
    p.add_argument("--url-ttl", type=float, default=900.0, help="result URL lifetime, seconds")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="switch on a failure mode, e.g. error_500_rate=0.05 (repeatable)",
    )


def _run_sandbox(args: argparse.Namespace) -> int:
    try:
        keys: tuple[KeySpec, ...] = tuple(parse_key_spec(k) for k in args.key) or (
            KeySpec(key=DEFAULT_API_KEY),
        )
        faults = _fault_settings(args.fault)
    except ValueError as exc:  # the sandbox's own settings say what is wrong
        raise OptionsError(str(exc)) from None
    config = SandboxConfig(
        keys=keys,
        seed=args.seed,
        epoch=args.epoch,
        rows_per_second=args.rows_per_second,
        max_running_jobs=args.max_running_jobs,
        rate_window_scale=args.rate_window_scale,
        url_ttl_seconds=args.url_ttl,
        faults=faults,
    )
    sandbox = Sandbox(config)
    with sandbox.serve(args.host, args.port, args.files_port) as served:
        hints = ", ".join(f"…{k.hint} ({k.tier}, {k.credits:,} credits)" for k in keys)
        print(f"placeflow sandbox: API {served.base_url}, result files {served.files_url}")
        print(f"keys: {hints}; stats at {served.base_url}/_sandbox/stats; Ctrl-C stops it")
        if keys == (KeySpec(key=DEFAULT_API_KEY),):
            print(f"default key: {DEFAULT_API_KEY}")
        sys.stdout.flush()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("placeflow sandbox: stopped")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placeflow",
        description="Bulk place-data ETL against the place-data service, with a sandbox emulator.",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_run_parsers(sub)
    refresh_cli.add_parsers(sub)
    research_cli.add_parser(sub)
    export_cli.add_parser(sub)
    report_cli.add_parsers(sub)
    match_cli.add_parser(sub)
    rows_cli.add_parsers(sub)
    _sandbox_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command, to say it again
    try:
        if args.command == "sandbox":
            return _run_sandbox(args)
        if hasattr(args, "func"):  # subcommands that carry their handler
            return int(args.func(args))
        return commands.dispatch(args)
    except PlaceflowError as exc:  # codes by class: placeflow.report.EXIT_CODES
        print(printable(f"placeflow: {exc}"), file=sys.stderr)  # it may quote a server
        code = exit_code(exc) or EXIT_FAILED
        if getattr(args, "json", False):  # under --json every exit path prints one document
            print(json.dumps(error_document(exc, code, getattr(args, "db", None)), sort_keys=True))
        return code


if __name__ == "__main__":
    sys.exit(main())
