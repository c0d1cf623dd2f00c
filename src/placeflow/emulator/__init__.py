"""A faithful local emulator of the place-data service (the "sandbox").

Plain backend state (`backend`), a thin HTTP layer (`app`), deterministic outcomes (`synth`),
switchable failure modes (`faults`), and two ways to reach it (`server`): in-process as an
httpx transport, or served on loopback with the result files on a second origin.

The names below load on first use, so a module that reads only the settings (the CLI's
`sandbox` parser, its defaults in the help) does not load the server, the app and the backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placeflow.support.lazy import lazy_names

if TYPE_CHECKING:
    from placeflow.emulator.server import Sandbox, SandboxTransport, ServedSandbox
    from placeflow.emulator.settings import (
        DEFAULT_API_KEY,
        FaultConfig,
        KeySpec,
        ManualClock,
        SandboxConfig,
        SystemClock,
        parse_key_spec,
    )

_LAZY = {
    "Sandbox": "placeflow.emulator.server",
    "SandboxTransport": "placeflow.emulator.server",
    "ServedSandbox": "placeflow.emulator.server",
    "DEFAULT_API_KEY": "placeflow.emulator.settings",
    "FaultConfig": "placeflow.emulator.settings",
    "KeySpec": "placeflow.emulator.settings",
    "ManualClock": "placeflow.emulator.settings",
    "SandboxConfig": "placeflow.emulator.settings",
    "SystemClock": "placeflow.emulator.settings",
    "parse_key_spec": "placeflow.emulator.settings",
}

__all__ = [
    "DEFAULT_API_KEY",
    "FaultConfig",
    "KeySpec",
    "ManualClock",
    "Sandbox",
    "SandboxConfig",
    "SandboxTransport",
    "ServedSandbox",
    "SystemClock",
    "parse_key_spec",
]


__getattr__ = lazy_names(__name__, _LAZY)
