"""Which service a run talks to: the real one (a key was given) or the embedded sandbox."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from placeflow.api.client import PlaceApiClient
from placeflow.api.journal import SpendJournal
from placeflow.api.limiter import RateGate, RateLimiter, machine_limiter, state_dir
from placeflow.config import load_settings
from placeflow.emulator import DEFAULT_API_KEY, Sandbox, SandboxConfig
from placeflow.emulator.keep import SandboxStore
from placeflow.errors import ConfigError
from placeflow.fields import RateLimits
from placeflow.support.redact import Secret, url_without_password


@dataclass(frozen=True)
class Target:
    """A service to talk to: where, with which key, and how to describe it to a person."""

    base_url: str
    api_key: Secret
    label: str
    limits: RateLimits
    gate: RateGate | None = field(default=None, compare=False)
    """What keeps the key's limits, when not the machine's limiter (`shared_limiter`): a flow
    under a Prefect server passes one shared by every process talking to that server."""
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    """How a client waits between polls and retries (a test passes one that returns at once)."""
    transport: httpx.BaseTransport | None = field(default=None, compare=False)
    """How a client reaches the service when not over the network: the embedded sandbox's
    in-process transport (`placeflow.emulator.SandboxTransport`)."""

    def client(
        self, *, timeout: float = 30.0, waiting: Callable[[float], None] | None = None
    ) -> PlaceApiClient:
        """A client whose limiter is shared with every other client of this key: `gate` when
        given, else the machine's limiter of this key; `waiting` is told before it waits (a
        run's writer, which lets go of the warehouse then)."""
        return PlaceApiClient(
            base_url=self.base_url,
            api_key=self.api_key.reveal(),
            limiter=self.gate if self.gate is not None else shared_limiter(self),
            timeout=timeout,
            sleep=self.sleep,
            waiting=waiting,
            transport=self.transport,
            journal=SpendJournal(state_dir() / f"{_ident(self)}.spend"),
        )


_LIMITERS: dict[str, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_limiter(target: Target) -> RateLimiter:
    """One rate limiter per key and service, shared by every process of this machine.

    Its windows live in a file named by a digest of the service and the key (never the key
    in clear), under a lock, so two runs on one key (a scheduled refresh and an analyst's run)
    keep the key's limits together; in a process, every client of the key shares one instance.
    """
    ident = _ident(target)
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(ident)
        if limiter is None:
            limiter = _LIMITERS[ident] = machine_limiter(target.limits, ident=ident)
        return limiter


def _ident(target: Target) -> str:
    """The digest that names a key and service's shared files (never the key in clear)."""
    return hashlib.sha256(f"{target.base_url}|{target.api_key.reveal()}".encode()).hexdigest()


def sandbox_folder(db: Path | str) -> Path:
    """Where the embedded sandbox of warehouse `db` keeps its state: beside it, so that a
    resume finds the jobs, idempotency records and usage of the run it finishes."""
    path = Path(db)
    return path.parent / f"{path.name}.sandbox"


@contextmanager
def embedded_sandbox(
    config: SandboxConfig | None = None, *, keep: Path | None = None
) -> Iterator[Target]:
    """A sandbox in this process for the length of the block, reached through its httpx
    transport (no sockets, no server threads; its origins its own: `Sandbox.transport`); its
    one key is paid, so the client keeps to the paid tier's limits. With `keep`, its state is
    kept in that
    folder and taken up again by the next sandbox kept there; while another process's sandbox
    holds the folder, or where it cannot be written (a read-only place), this one keeps
    nothing (said in its label)."""
    store = SandboxStore(keep) if keep is not None else None
    try:
        kept = store is not None and store.acquire()
    except OSError:  # a read-only or full place: a sandbox of this process alone
        kept = False
    try:
        sandbox = Sandbox(config or SandboxConfig(), store=store if kept else None)
        transport = sandbox.transport(own_origins=True)
        # Kept: one label for every process on the warehouse, the same service to a resume
        label = f"embedded sandbox at {sandbox.base_url}"
        if keep is not None:
            label = (
                f"embedded sandbox kept in {keep}"
                if kept
                else f"{label} (state not kept: {keep} is held by another process's"
                " sandbox or cannot be written)"
            )
        yield Target(
            base_url=sandbox.base_url,
            api_key=Secret(DEFAULT_API_KEY),
            label=label,
            limits=RateLimits.for_tier("paid"),
            transport=transport,
        )
    finally:
        if store is not None and kept:
            store.release()


@contextmanager
def open_target(
    *,
    api_key: Secret | None,
    base_url: str | None,
    limits: RateLimits | None = None,
    db: Path | str | None = None,
) -> Iterator[Target]:
    """The real service when a key is given (kept to `limits`, the paid tier's by default),
    else an embedded sandbox, its state kept beside the warehouse `db` when one is named."""
    if api_key is None:
        with embedded_sandbox(keep=None if db is None else sandbox_folder(db)) as target:
            yield target
        return
    if not base_url:
        raise ConfigError("a key needs a base URL: set PLACEFLOW_BASE_URL")
    yield Target(
        base_url=base_url,
        api_key=api_key,
        label=url_without_password(base_url),  # shown and recorded: never a proxy's password
        limits=limits or RateLimits.for_tier("paid"),
    )


@contextmanager
def environment_defaults(
    target: Target | None, db: Path | str | None
) -> Iterator[tuple[Target, Path | str]]:
    """What a call of the Python API left out, from the environment and the configuration
    file (`placeflow.config`): the service its key names, else an embedded sandbox served for
    the block; the warehouse PLACEFLOW_DB names, else DEFAULT_DB."""
    settings = load_settings()
    where = settings.db if db is None else db
    if target is not None:
        yield target, where
        return
    with open_target(
        api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits, db=where
    ) as opened:  # the embedded sandbox keeps its state beside the warehouse, for a resume
        yield opened, where
