"""End-to-end fixtures: one Prefect test harness per session, a sandbox served on loopback,
and the environment that points placeflow at it."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from placeflow.config import apply_prefect_defaults
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig, ServedSandbox
from placeflow.errors import FailedResult
from tests.prefect_harness import EARLY, EarlyServer, pointed_at

apply_prefect_defaults()

KEY = "sk_e2e_paid_key_7a7a"


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """One Prefect test server for the whole session (started when collection ended, see
    tests/conftest.py); Prefect in this process points at it; yields its API URL."""
    if not EARLY:  # a test reached without the collection hook (e.g. requested dynamically)
        EARLY.append(EarlyServer())
    with pointed_at(EARLY[0].wait()) as url:
        yield url


class Served:
    def __init__(self, sandbox: Sandbox, served: ServedSandbox) -> None:
        self.sandbox = sandbox
        self.base_url = served.base_url
        self.files_url = served.files_url

    def stats(self) -> dict[str, Any]:
        return self.sandbox.stats()

    def requests(self, route: str) -> int:
        return sum(self.stats()["requests"].get(route, {}).values())

    def credits(self) -> dict[str, int]:
        return dict(self.stats()["keys"][KEY]["credits"])


ServeSandbox = Callable[..., Served]


def _starter(
    setenv: Callable[[str, str], None], started: list[tuple[Sandbox, Any]]
) -> ServeSandbox:
    """A function that serves a sandbox on loopback and points PLACEFLOW_* at it."""

    def start(**overrides: Any) -> Served:
        keys = overrides.pop("keys", (KeySpec(key=KEY, credits=1_000_000),))
        sandbox = Sandbox(SandboxConfig(keys=keys, **overrides))
        ctx = sandbox.serve()
        served = ctx.__enter__()
        started.append((sandbox, ctx))
        setenv("PLACEFLOW_API_KEY", KEY)
        setenv("PLACEFLOW_BASE_URL", served.base_url)
        return Served(sandbox, served)

    return start


def _stop(started: list[tuple[Sandbox, Any]]) -> None:
    for _, ctx in reversed(started):
        ctx.__exit__(None, None, None)
    for sandbox, _ in started:
        errors = sandbox.backend.internal_errors
        assert not errors, f"the sandbox failed internally:\n{errors[-1]}"


@pytest.fixture
def serve_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServeSandbox]:
    """Start a sandbox on loopback and point PLACEFLOW_* at it (config overrides as kwargs)."""
    started: list[tuple[Sandbox, Any]] = []
    yield _starter(monkeypatch.setenv, started)
    _stop(started)


@pytest.fixture(scope="module")
def serve_sandbox_module() -> Iterator[ServeSandbox]:
    """Like `serve_sandbox`, for module-scoped fixtures."""
    mp = pytest.MonkeyPatch()
    started: list[tuple[Sandbox, Any]] = []
    yield _starter(mp.setenv, started)
    _stop(started)
    mp.undo()


def run_flow(**params: Any) -> tuple[str, dict[str, Any]]:
    """Run run_files in this process: its final state's name and its summary dict.

    Run options may be given flat (`route="job"`), as on the command line."""
    from placeflow.flows.run import run_files
    from placeflow.options import RunOptions, split_options

    options, rest = split_options(params)
    if options:
        rest["options"] = RunOptions.parse(options)
    state = run_files(**rest, return_state=True)
    data = state.result(raise_on_failure=False)
    data = dict(data) if isinstance(data, FailedResult) else data  # a failed run's summary
    assert isinstance(data, dict), data
    return str(state.type.value), data


def run_library(**params: Any) -> tuple[str, dict[str, Any]]:
    """What `run_flow` returns, from placeflow.run / placeflow.resume without Prefect: the
    flow's state name and summary dict as the flow makes them (its Ending's rules: a summary
    with its exit code; an error's summary, message and exit code; FAILED unless exit 0).

    For the tests about the library's behaviour over real HTTP, not about the flow."""
    import placeflow
    from placeflow.config import load_settings
    from placeflow.errors import PlaceflowError, RunStopped, exit_code
    from placeflow.options import RunOptions, split_options
    from placeflow.reporting.summary import exit_code_for
    from placeflow.runner.target import open_target

    options_given, rest = split_options(params)
    options = RunOptions.parse(options_given) if options_given else RunOptions()
    db = rest["db"]
    settings = load_settings()
    try:
        with open_target(
            api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
        ) as target:
            if rest.get("resume_run_id"):
                summary = placeflow.resume(
                    rest["resume_run_id"], db=db, target=target, poll_timeout=options.poll_timeout
                )
            else:
                summary = placeflow.run(rest["inputs"], options=options, db=db, target=target)
    except PlaceflowError as exc:
        code = exit_code(exc)
        stopped = exc.summary if isinstance(exc, RunStopped) else None
        if stopped is None:
            return "FAILED", {"status": "failed", "message": str(exc), "exit_code": code}
        data = {**stopped.as_dict(), "exit_code": code, "message": stopped.message or str(exc)}
        return "FAILED", data
    data = {**summary.as_dict(), "exit_code": exit_code_for(summary.status)}
    return ("COMPLETED" if data["exit_code"] == 0 else "FAILED"), data


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def places(n: int, start: int = 0, city: str = "Springfield") -> list[dict[str, Any]]:
    """Distinct, valid places as a user's CSV would have them."""
    return [
        {
            "id": f"u{i}",
            "name": f"Corner Shop {i}",
            "address": f"{i} Elm Street",
            "city": city,
            "country": "USA",
        }
        for i in range(start, start + n)
    ]
