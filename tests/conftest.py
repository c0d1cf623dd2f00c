"""Session-wide ordering of the tests that need the Prefect test server (`prefect_api`).

Run alone, the suite moves them to the end and starts that server as soon as collection shows
one is needed, so it boots while the other tests run. Run by pytest-xdist's workers (the
default: `-n auto --dist loadgroup` in pyproject.toml), they are one group, given first to one
worker, which starts the one server when its first test asks; the other workers run the rest
meanwhile, and no worker boots a server it never uses. Every other module's tests are a group
of their own, so a module's fixtures (a sample run, a sandbox's ground truth) are built once.
"""

from __future__ import annotations

import os

import pytest

from tests.prefect_harness import EARLY, EarlyServer

PREFECT_GROUP = "prefect-server"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores (at most 4): many tests wait on a loopback
    service or a subprocess, and the extra worker runs meanwhile."""
    return min(4, (os.cpu_count() or 1) + 1)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups' marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the tests that use `prefect_api` (last alone, first as one group under xdist) and,
    alone, start their server now."""
    if config.option.collectonly:
        return
    needs = [item for item in items if "prefect_api" in getattr(item, "fixturenames", ())]
    rest = [item for item in items if "prefect_api" not in getattr(item, "fixturenames", ())]
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for item in needs:
            item.add_marker(pytest.mark.xdist_group(PREFECT_GROUP))
        for item in rest:  # a module's tests together: its module fixtures are built once
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
        items[:] = needs + rest
        return
    if needs:
        items[:] = rest + needs
        if not EARLY:
            EARLY.append(EarlyServer())


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the session's server whether or not a test reached it."""
    while EARLY:
        EARLY.pop().stop()
