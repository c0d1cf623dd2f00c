"""Session-wide ordering: the tests that need the Prefect test server run last, and that server
starts as soon as collection shows one is needed, so it boots while the other tests run."""

from __future__ import annotations

import pytest

from tests.prefect_harness import EARLY, EarlyServer


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the tests that use `prefect_api` to the end (stable order) and start its server."""
    if config.option.collectonly:
        return
    needs = [item for item in items if "prefect_api" in getattr(item, "fixturenames", ())]
    if not needs:
        return
    items[:] = [item for item in items if item not in needs] + needs
    if not EARLY:
        EARLY.append(EarlyServer())


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the early server whether or not a test reached it."""
    while EARLY:
        EARLY.pop().stop()
