"""One error tree: every public exception class of placeflow derives from PlaceflowError."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from functools import cache
from pathlib import Path

import placeflow
from placeflow import errors
from placeflow.api import errors as api_errors
from placeflow.errors import PlaceflowError

ALLOWED_OUTSIDE = {
    # The sandbox's own errors: the emulator answers them as HTTP error replies (the client then
    # raises them as placeflow's ApiError classes); they are the service's, not placeflow's.
    "placeflow.emulator.responses.ServiceError",
    "placeflow.emulator.ledger.InsufficientCredits",
}


@cache
def public_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the package whose name has no leading _."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(placeflow.__path__, "placeflow."):
        if info.name.endswith(".__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{obj.__qualname__}"] = obj
    return found


def test_every_public_exception_derives_from_placeflow_error() -> None:
    """Each public exception class of every placeflow module is a PlaceflowError (the sandbox's
    HTTP errors aside)."""
    classes = public_exceptions()
    assert "placeflow.errors.PlaceflowError" in classes  # the walk reached the package's modules
    strays = sorted(
        name for name, cls in classes.items()
        if not issubclass(cls, PlaceflowError) and name not in ALLOWED_OUTSIDE
    )  # fmt: skip
    assert strays == []


def test_allow_list_names_only_existing_classes_outside_the_tree() -> None:
    """The allow-list is not stale: each entry exists and really is outside the tree."""
    classes = public_exceptions()
    for name in ALLOWED_OUTSIDE:
        assert name in classes
        assert not issubclass(classes[name], PlaceflowError)


def test_every_placeflow_error_is_drawn_in_a_tree_docstring() -> None:
    """Each PlaceflowError class is named in the tree drawn in placeflow.errors or
    placeflow.api.errors, so the drawing stays the whole tree."""
    drawn = f"{errors.__doc__}\n{api_errors.__doc__}"
    missing = sorted(
        name for name, cls in public_exceptions().items()
        if issubclass(cls, PlaceflowError) and cls.__name__ not in drawn
    )  # fmt: skip
    assert missing == []


SRC = Path(placeflow.__file__).resolve().parent
BUILT_IN = {
    name
    for name, obj in vars(builtins).items()
    if inspect.isclass(obj) and issubclass(obj, BaseException)
}
PROTOCOL = {"__getattr__": "AttributeError", "__next__": "StopIteration"}
"""Raises Python's protocols ask for by name: a module's or class's `__getattr__` says "no such
attribute" with AttributeError (hasattr, from-imports), an iterator ends with StopIteration."""


def built_in_raises(path: Path) -> list[tuple[int, str]]:
    """(line, class) of each `raise` of `path` that raises a built-in exception class (called
    or not); a re-raise (`raise`, `raise exc`) names no class and is not one."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = raised.id if isinstance(raised, ast.Name) else None
            if isinstance(raised, ast.Attribute) and isinstance(raised.value, ast.Name):
                name = raised.attr if raised.value.id == "builtins" else None
            if name in BUILT_IN and PROTOCOL.get(function) != name:
                found.append((node.lineno, name))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_no_module_raises_a_built_in_exception() -> None:
    """Every error placeflow raises is one of its tree (a PlaceflowError, with the built-in it
    stands for as a second base where callers catch that): no `raise ValueError(...)` and the
    like outside the sandbox, whose errors become HTTP replies."""
    paths = [p for p in sorted(SRC.rglob("*.py")) if "emulator" not in p.relative_to(SRC).parts]
    assert len(paths) > 100  # the walk found the package
    hits = [
        f"{p.relative_to(SRC)}:{line}: raise {name}" for p in paths
        for line, name in built_in_raises(p)
    ]  # fmt: skip
    assert hits == []


def test_the_raise_scan_sees_a_built_in_raise(tmp_path: Path) -> None:
    """The scan flags built-in raises, called or bare, and lets re-raises and protocols pass."""
    module = tmp_path / "placeflow_sample.py"
    module.write_text(
        "import builtins\n"
        "def f(x):\n"
        "    try:\n"
        "        raise ValueError('bad')\n"
        "    except ValueError as exc:\n"
        "        if x:\n"
        "            raise\n"
        "        raise exc from None\n"
        "def g():\n"
        "    raise RuntimeError\n"
        "def h():\n"
        "    raise builtins.KeyError('k')\n"
        "def __getattr__(name):\n"
        "    raise AttributeError(name)\n"
    )
    assert built_in_raises(module) == [(4, "ValueError"), (10, "RuntimeError"), (12, "KeyError")]


ROOT = SRC.parents[1]


def defined_names(path: Path) -> set[str]:
    """Every name `path` binds by assignment, at any depth (tuple targets too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            targets = [node.target]
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
                elif isinstance(leaf, ast.Attribute):
                    names.add(leaf.attr)
    return names


def test_exit_codes_are_defined_only_in_errors() -> None:
    """The exit codes and their class table are defined once, in placeflow.errors: no other
    module of the package (research, reporting, cli, flows, ...), the benchmarks, the scripts or
    the tests defines an EXIT_ name; every command imports them."""
    paths = [
        p
        for folder in ("src/placeflow", "bench", "scripts", "tests")
        for p in sorted((ROOT / folder).rglob("*.py"))
    ]
    definers = sorted(
        str(p.relative_to(ROOT)) for p in paths
        if any(name.startswith("EXIT_") for name in defined_names(p))
    )  # fmt: skip
    assert definers == ["src/placeflow/errors.py"]


def test_exit_codes_keep_their_values() -> None:
    """0 ok, 1 failed, 2 usage, 3 refused, 130 interrupted; the table maps the classes to them,
    first match wins, and an error that is not placeflow's has no code."""
    assert (
        errors.EXIT_OK, errors.EXIT_FAILED, errors.EXIT_USAGE, errors.EXIT_REFUSED,
        errors.EXIT_INTERRUPTED,
    ) == (0, 1, 2, 3, 130)  # fmt: skip
    cases = {
        errors.BudgetRefused("over", run_id="r"): 3,
        errors.CreditsRanOut("402", run_id="r"): 3,
        errors.RateCardError("no rate"): 3,
        errors.OptionsError("bad"): 2,
        errors.UnknownRun("no run"): 2,
        errors.WarehouseError("busy"): 1,
        api_errors.ServerError("500"): 1,
    }
    assert {type(exc).__name__: errors.exit_code(exc) for exc in cases} == {
        type(exc).__name__: code for exc, code in cases.items()
    }
    assert errors.exit_code(ValueError("not ours")) is None
