"""Session-wide ordering of the tests that need the Prefect test server (`prefect_api`).

Run alone, the suite moves them to the end and starts that server as soon as collection shows
one is needed, so it boots while the other tests run. Run by pytest-xdist's workers (the
default: `-n auto --dist loadgroup` in pyproject.toml), they are one group, given to one
worker, which starts the one server when its first test asks; the other workers run the rest
meanwhile, and no worker boots a server it never uses. Every other module's tests are a group
of their own, so a module's fixtures (a sample run, a sandbox's ground truth) are built once.

The groups reach xdist's controller through `GroupScheduling` (tests/xdist_groups.py), not
through `xdist_group` marks: pytest 9.2's structured node ids dropped the `@group` suffix
xdist 3.8 writes into them, and every worker then booted a Prefect server of its own and
rebuilt the module fixtures of each module it was handed a test of
(pytest-dev/pytest-xdist#1386).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.prefect_harness import EARLY, EarlyServer
from tests.xdist_groups import GroupScheduling, groups_dir, write_groups

PREFECT_GROUP = "prefect-server"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores (at most 4): many tests wait on a loopback
    service or a subprocess, and the extra worker runs meanwhile."""
    return min(4, (os.cpu_count() or 1) + 1)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: tell each worker where to write the groups it collected."""
    node.workerinput["placeflow_groups"] = str(groups_dir(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Controller: `--dist loadgroup` schedules by the groups the workers wrote."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return GroupScheduling(config, log, groups_dir(config))


@pytest.hookimpl(trylast=True)  # after `-m 'not slow'` deselected: only tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the tests that use `prefect_api` (last alone; under xdist one group, the groups
    written for the controller's scheduler) and, alone, start their server now."""
    if config.option.collectonly:
        return
    needs = [item for item in items if "prefect_api" in getattr(item, "fixturenames", ())]
    rest = [item for item in items if "prefect_api" not in getattr(item, "fixturenames", ())]
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        groups = {item.nodeid: PREFECT_GROUP for item in needs}
        for item in rest:  # a module's tests together: its module fixtures are built once
            groups[item.nodeid] = item.nodeid.split("::", 1)[0]
        write_groups(workerinput, groups)
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
