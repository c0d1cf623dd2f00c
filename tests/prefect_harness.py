"""The session's Prefect test server, started as soon as collection shows a test needs it.

`prefect_test_harness` starts its server (a fresh SQLite database, migrated) and waits for it
in one call: 10-20 s on a quiet two-core machine, far more on a busy one, during which the
suite does nothing else. Here the same server (the same uvicorn command and settings as the
harness's) is spawned when collection ends, the tests that need it are run last, and the
`prefect_api` fixture only waits for its health and points Prefect at it, as the harness does.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from placeflow.config import apply_prefect_defaults

STARTUP_TIMEOUT = 300.0
"""A fresh database is migrated at start: 10-20 s on a quiet machine, minutes on a busy one."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prefect_parent() -> str:
    """The directory holding the prefect package (uvicorn's --app-dir), without importing it."""
    spec = importlib.util.find_spec("prefect")
    assert spec is not None and spec.origin is not None, "prefect is not installed"
    return str(Path(spec.origin).parent.parent)


class EarlyServer:
    """A Prefect API server in a subprocess, on a temporary SQLite database, started now."""

    def __init__(self) -> None:
        apply_prefect_defaults()
        self.home = Path(tempfile.mkdtemp(prefix="placeflow-prefect-"))
        self.port = _free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.log = self.home / "server.log"
        db = "sqlite+aiosqlite:///" + str(self.home / "prefect-test.db")
        env = {
            **os.environ,
            # prefect_test_harness's server: UI off, ephemeral-server settings, its own database
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
            "PREFECT_SERVER_DATABASE_CONNECTION_URL": db,
        }
        env.pop("PREFECT_API_URL", None)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", _prefect_parent(),
                 "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
                 "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def wait(self, timeout: float = STARTUP_TIMEOUT) -> str:
        """Wait (bounded) until the server answers /health; its API URL. One client asks
        every time: a client of its own per ask (`httpx.get`) builds a TLS context each time,
        ~50 ms of CPU, ten times a second while the server boots."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=5) as http:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"the Prefect test server exited {self.proc.returncode}:\n"
                        + self.log.read_text(errors="replace")[-3000:]
                    )
                with suppress(httpx.HTTPError):
                    if http.get(f"{self.api_url}/health").status_code == 200:
                        return self.api_url
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the Prefect test server did not answer in {timeout:.0f} s")
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.home, ignore_errors=True)


@contextmanager
def pointed_at(api_url: str) -> Iterator[str]:
    """Prefect in this process pointed at the server, as `prefect_test_harness` does; its log
    and event workers drained before the server stops."""
    import prefect.context
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    with (
        temporary_settings(updates={PREFECT_API_URL: api_url}),
        prefect.context._temporary_global_settings_context(  # as the harness does
            prefect.context.get_settings_context()
        ),
    ):
        yield api_url

        async def drain() -> None:
            with suppress(RuntimeError):  # the worker may never have started
                result = APILogWorker.instance().drain()
                if inspect.isawaitable(result):
                    await result
            result = EventsWorker.drain_all()
            if inspect.isawaitable(result):
                await result

        run_coro_as_sync(drain())


EARLY: list[EarlyServer] = []
"""The session's server, once collection found a test that uses `prefect_api`."""
