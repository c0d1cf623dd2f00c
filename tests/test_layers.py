"""The rule of direction of `placeflow`'s imports (the package docstring), kept.

Every import of src/placeflow counts: at the top of a module, inside a function (a lazy
import is still a dependency) and under TYPE_CHECKING (mypy follows it). Importing a module
also runs its packages' `__init__`, so an import of `placeflow.api.errors` is an edge to
`placeflow.api` too (from outside that package: inside it, its `__init__` already runs).
Measured by hand with the same code: `python -m tests.test_layers`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "placeflow").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    """The module an imported name lives in (the longest known prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: None if is_pkg else -1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names = [f"{base}.{a.name}" for a in node.names]
        for name in names:
            if not name.startswith("placeflow"):
                continue
            found = _target(name)
            if found == "placeflow" and module != "placeflow":  # the root itself, by name
                out.add(found)
            while found and found != "placeflow":  # its packages' __init__ run too,
                if not f"{module}.".startswith(f"{found}."):  # but not those `module` is in
                    out.add(found)
                found = found.rpartition(".")[0]
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}

FLOORS: list[tuple[str, tuple[str, ...]]] = [  # from the top
    ("public face", ("placeflow",)),
    ("cli", ("placeflow.cli",)),
    ("flows", ("placeflow.flows",)),
    ("runner", ("placeflow.runner",)),
    ("reporting", ("placeflow.reporting",)),
    ("exporters and emulator", ("placeflow.exporters", "placeflow.emulator")),
    ("pipeline", ("placeflow.pipeline",)),
    ("state", ("placeflow.state",)),
    ("store and api", ("placeflow.store", "placeflow.api")),
    ("settings", ("placeflow.config", "placeflow.options")),
    ("fields and support", ("placeflow.fields", "placeflow.support")),
    ("base", ("placeflow.errors", "placeflow.events")),
]  # fmt: skip
"""The floors of the rule, top first; a unit (top-level module or subpackage) is on one."""

BACK_UP_ALLOWED: list[tuple[str, str]] = []
"""Imports that run back up a floor, named: at most three."""


def floor_of(module: str) -> int:
    """The floor of `module`, counted from the bottom (base modules 0); -1 when on none."""
    for height, (_, units) in enumerate(reversed(FLOORS)):
        if module in units or any(module.startswith(f"{u}.") for u in units if u != "placeflow"):
            return height
    return -1


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def _unit(module: str) -> str:
    """A top-level module or subpackage of placeflow: the unit a floor is made of."""
    return ".".join(module.split(".")[:2])


def back_up_imports() -> list[tuple[str, str]]:
    return sorted(
        (m, t) for m, targets in GRAPH.items() for t in targets if floor_of(t) > floor_of(m)
    )


def test_every_module_has_a_floor() -> None:
    """Each module of src/placeflow belongs to one floor of the rule."""
    assert all(floor_of(m) >= 0 for m in MODULES)
    assert len(MODULES) > 100  # the walk found the package


def test_no_import_circle_between_modules() -> None:
    """No module imports itself back through others (packages' __init__ included)."""
    assert _cycles(GRAPH) == []


def test_no_import_circle_between_packages() -> None:
    """Collapsed to top-level modules and subpackages, the imports still have no circle."""
    units: dict[str, set[str]] = defaultdict(set)
    for module, targets in GRAPH.items():
        units[_unit(module)] |= {_unit(t) for t in targets} - {_unit(module)}
    assert _cycles(dict(units)) == []


def test_units_of_one_floor_import_nothing_of_each_other() -> None:
    """Two units on one floor are side by side: neither imports the other, so the floors are
    an order, not a bag (a unit that needs another belongs above it)."""
    sideways = sorted(
        (m, t)
        for m, targets in GRAPH.items()
        for t in targets
        if floor_of(t) == floor_of(m) and _unit(t) != _unit(m) and _unit(m) != "placeflow"
    )
    assert sideways == []


def test_at_most_eight_flat_modules() -> None:
    """The top of src/placeflow holds at most eight flat modules (its __init__ aside): the
    rest lives in rooms grouped by what they do."""
    flat = [p.name for p in (SRC / "placeflow").glob("*.py") if p.name != "__init__.py"]
    assert len(flat) <= 8, sorted(flat)


def test_imports_run_down_the_floors() -> None:
    """Imports go from a floor to the same or a lower one; the few that run back up are the
    ones named in `BACK_UP_ALLOWED`, at most three."""
    assert len(BACK_UP_ALLOWED) <= 3
    assert set(back_up_imports()) == set(BACK_UP_ALLOWED)


@pytest.mark.parametrize("floor", [name for name, _ in FLOORS])
def test_the_rule_names_every_floor(floor: str) -> None:
    """The package docstring states the rule with every floor `FLOORS` names."""
    import placeflow

    assert floor in (placeflow.__doc__ or "")


if __name__ == "__main__":
    print(f"{len(MODULES)} modules, {sum(map(len, GRAPH.values()))} imports")
    print("circles:", _cycles(GRAPH))
    for module, target in back_up_imports():
        print(f"back up: {module} -> {target}")


MODULE_LINES = 400
"""GUIDE.md: modules well under 400 lines."""


def test_every_module_is_under_400_lines() -> None:
    """Every module of src/placeflow has fewer than 400 lines (split one before it grows)."""
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MODULE_LINES
    }
    assert not long, f"modules of {MODULE_LINES} lines or more: {long}"
