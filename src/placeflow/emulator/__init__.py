"""A faithful local emulator of the place-data service (the "sandbox").

Plain backend state (`backend`), a thin HTTP layer (`app`), deterministic outcomes (`synth`),
switchable failure modes (`faults`), and two ways to reach it (`server`): in-process as an
httpx transport, or served on loopback with the result files on a second origin.
"""

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
