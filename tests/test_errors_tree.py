"""One error tree: every public exception class of placeflow derives from PlaceflowError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache

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
