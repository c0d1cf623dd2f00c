"""`placeflow sandbox`: serve the sandbox emulator of the place-data service on loopback."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from placeflow.emulator.settings import DEFAULT_API_KEY, DEFAULT_CREDITS
from placeflow.errors import EXIT_OK, OptionsError

if TYPE_CHECKING:
    from placeflow.emulator.settings import FaultConfig


def _fault_settings(pairs: Sequence[str]) -> FaultConfig:
    from placeflow.emulator.settings import FaultConfig

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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument(
        "--keep",
        metavar="FOLDER",
        default=None,
        help="keep the sandbox's state (jobs, idempotency records, credits, ledger) in FOLDER,"
        " taken up again by the next sandbox started on it (default: in memory only)",
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
    p.add_argument("-q", "--quiet", action="store_true",
                   help="quiet: print only the line with the two addresses")  # fmt: skip
    p.set_defaults(func=sandbox_command)


def sandbox_command(args: argparse.Namespace) -> int:
    from placeflow.emulator import Sandbox
    from placeflow.emulator.settings import KeySpec, SandboxConfig, parse_key_spec

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
    store = None
    if args.keep is not None:
        from pathlib import Path

        from placeflow.emulator.keep import SandboxStore

        store = SandboxStore(Path(args.keep))
        if not store.acquire():
            raise OptionsError(f"--keep {args.keep}: another live sandbox keeps its state there")
    sandbox = Sandbox(config, store=store)
    with sandbox.serve(args.host, args.port, args.files_port) as served:
        hints = ", ".join(f"…{k.hint} ({k.tier}, {k.credits:,} credits)" for k in keys)
        print(f"placeflow sandbox: API {served.base_url}, result files {served.files_url}")
        if not args.quiet:
            print(f"keys: {hints}; stats at {served.base_url}/_sandbox/stats; Ctrl-C stops it")
        if store is not None:
            taken = "taken up from" if sandbox.restored else "kept in"
            print(f"state {taken} {args.keep}")
        if keys == (KeySpec(key=DEFAULT_API_KEY),) and not args.quiet:
            print(f"default key: {DEFAULT_API_KEY}")
        sys.stdout.flush()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            if not args.quiet:
                print("placeflow sandbox: stopped")
    return EXIT_OK
