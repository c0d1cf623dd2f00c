"""pytest-xdist's `--dist loadgroup`, with the groups sent beside the node ids, not in them.

xdist 3.8 tells its controller a test's group by appending `@group` to the node id a worker
reports; from pytest 9.2 a node id is structured and that suffix is silently dropped
(pytest-dev/pytest-xdist#1386), so every test became a group of its own. Here each worker
writes the groups it collected (node id -> group) to a file in a directory the controller made
and named in the worker's `workerinput`; the controller's scheduler reads them when it first
splits the collection (every worker has collected by then). A node id that still carries an
`@group` suffix (an xdist that writes it again) keeps that group; one no worker named is a
group of its module.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]  # no py.typed

_DIR = pytest.StashKey[Path]()
KEY = "placeflow_groups"


def groups_dir(config: pytest.Config) -> Path:
    """Controller: the session's directory of the workers' group files (made once, removed at
    the end of the session)."""
    if _DIR not in config.stash:
        made = Path(tempfile.mkdtemp(prefix="placeflow-xdist-groups-"))
        config.stash[_DIR] = made
        config.add_cleanup(lambda: shutil.rmtree(made, ignore_errors=True))
    return config.stash[_DIR]


def write_groups(workerinput: dict[str, Any], groups: dict[str, str]) -> None:
    """Worker: its collection's groups, written whole (renamed into place) before it reports
    its collection."""
    folder = workerinput.get(KEY)
    if folder is None:  # a controller without our hooks: xdist's own grouping applies
        return
    target = Path(folder) / f"{workerinput['workerid']}.json"
    partial = target.with_suffix(".part")
    partial.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(partial, target)


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # an untyped base (above)
    """xdist's load-by-scope scheduling, a scope being the group a worker wrote for the test."""

    def __init__(self, config: pytest.Config, log: Any, folder: Path) -> None:
        super().__init__(config, log)
        self._folder = folder
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # xdist's own suffix, as LoadGroupScheduling
            return nodeid.split("@")[-1]
        if self._groups is None:
            self._groups = {}
            for path in sorted(self._folder.glob("*.json")):
                self._groups.update(json.loads(path.read_text(encoding="utf-8")))
        return self._groups.get(nodeid) or nodeid.split("::", 1)[0]
