"""A real `prefect server start` on loopback, and workers beside it, for the tests that need one.

Everything runs in a temporary PREFECT_HOME (SQLite), with analytics off and the UI off. The
server and each worker start in a session of their own; stopping kills those sessions and
every process they started (a process worker starts each flow run in a session of its own).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

STARTUP_TIMEOUT = 300.0
"""A first start migrates the database: 10-20 s on a quiet machine, minutes on a busy one."""

SERVER_SETTINGS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_UI_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED": "false",
    # A few future runs per deployment, not a hundred: each would start a process.
    "PREFECT_SERVER_SERVICES_SCHEDULER_MAX_RUNS": "3",
    "PREFECT_SERVER_SERVICES_SCHEDULER_MIN_RUNS": "1",
    "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
    # SQLite under a busy machine: wait for the database rather than answer 503.
    "PREFECT_SERVER_DATABASE_TIMEOUT": "60",
    "PREFECT_LOGGING_LEVEL": "INFO",
    "COLUMNS": "250",  # the CLI's tables truncate names to the terminal width
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    condition: Callable[[], Any], *, timeout: float, every: float = 0.5, what: str = ""
) -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop_process(proc: subprocess.Popen[bytes], *, grace: float = 20.0) -> None:
    """SIGTERM the process's session, then SIGKILL it and every descendant still alive."""
    family = descendants(proc.pid)
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    family += descendants(proc.pid) if proc.poll() is None else []
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in family:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(30)


@dataclass
class PrefectServer:
    """A running server: its API URL, the environment that points Prefect at it, its logs."""

    api_url: str
    env: dict[str, str]
    home: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def prefect(
        self, *args: str, cwd: Path | None = None, timeout: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        """Run the `prefect` CLI against this server; fail with its output if it fails."""
        done = subprocess.run(
            [sys.executable, "-m", "prefect", *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"prefect {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done

    def start(self, name: str, args: Sequence[str], cwd: Path | None = None) -> Path:
        """Start a long-running process (a worker, a serve process) in a session of its own;
        stopped with the server. Returns the path of its log."""
        log = self.home / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                list(args),
                env=self.env,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return log

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call the server's REST API and return its JSON. A 503 (SQLite busy on a loaded
        machine) is asked again, for up to two minutes."""

        def answered() -> httpx.Response | None:
            reply = httpx.request(method, f"{self.api_url}{path}", json=body, timeout=60)
            return None if reply.status_code == 503 else reply

        reply: httpx.Response = wait_for(answered, timeout=120, what=f"{method} {path} without 503")
        reply.raise_for_status()
        return reply.json() if reply.content else None

    def flow_runs(self, deployment_id: str) -> list[dict[str, Any]]:
        body = {"deployments": {"id": {"any_": [deployment_id]}}, "limit": 200}
        runs: list[dict[str, Any]] = self.api("POST", "/flow_runs/filter", body)
        return runs


def prefect_env(home: Path, api_url: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any PREFECT_*/PLACEFLOW_* setting, pointed at the
    server (placeflow then uses its embedded sandbox)."""
    env = {
        k: v
        for k, v in (base if base is not None else dict(os.environ)).items()
        if not k.startswith(("PREFECT_", "PLACEFLOW_"))
    }
    env.update(SERVER_SETTINGS)
    env.update({"PREFECT_HOME": str(home), "PREFECT_API_URL": api_url})
    return env


@contextmanager
def prefect_server(home: Path) -> Iterator[PrefectServer]:
    """Start `prefect server start` on a free loopback port; stop it and all it started after."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = PrefectServer(
        api_url=f"http://127.0.0.1:{port}/api",
        env=prefect_env(home, f"http://127.0.0.1:{port}/api"),
        home=home,
    )
    log = server.start(
        "server",
        [
            sys.executable,
            "-m",
            "prefect",
            "server",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            f"{port}",
        ],
    )
    main = server.procs[0]

    http = httpx.Client(timeout=5)  # one client for every ask: each builds a TLS context

    def healthy() -> bool:
        if main.poll() is not None:
            raise AssertionError(f"prefect server exited {main.returncode}:\n{log.read_text()}")
        try:
            return http.get(f"{server.api_url}/health").json() is True
        except (httpx.HTTPError, json.JSONDecodeError):
            return False

    try:
        with http:
            wait_for(healthy, timeout=STARTUP_TIMEOUT, what=f"{server.api_url}/health")
        yield server
    finally:
        for proc in reversed(server.procs):
            stop_process(proc)
