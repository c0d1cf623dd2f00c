"""The run options on the command line: one flag per `RunOptions` field (its description the
help, its `json_schema_extra` marks the flag's name, metavar and where it is offered), and the
options the parsed flags give."""

from __future__ import annotations

import argparse
from typing import Any, Literal

from placeflow.options import RunOptions, option_extra

__all__ = ["add_option_flags", "options_from_args"]


def add_option_flags(parser: argparse.ArgumentParser, *, command: str) -> None:
    """One flag per option (defaults left to the model: a flag not given is not passed)."""
    for name, info in RunOptions.model_fields.items():
        extra = option_extra(name)
        if extra.get("cli") is False or (command == "estimate" and extra.get("estimate") is False):
            continue
        flag = str(extra.get("flag", "--" + name.replace("_", "-")))
        kw: dict[str, Any] = {"dest": name, "help": info.description, "default": argparse.SUPPRESS}
        if "metavar" in extra:
            kw["metavar"] = extra["metavar"]
        annotation = info.annotation
        if annotation is bool:
            kw["action"] = "store_true"
        elif name in ("mapping", "constants"):
            kw["action"] = "append"
        elif getattr(annotation, "__origin__", None) is Literal:
            kw["choices"] = annotation.__args__  # type: ignore[union-attr]  # a Literal's values
        elif extra.get("duration"):
            kw["type"] = str  # the model reads the duration (a bare number is days)
        elif name != "attributes":
            text = annotation in (str, str | None)
            kw["type"] = float if annotation is float else (str if text else int)
        parser.add_argument(flag, **kw)


def options_from_args(args: argparse.Namespace, **overrides: Any) -> RunOptions:
    """The options the parsed flags give (flags not given keep the model's defaults)."""
    given = {n: getattr(args, n) for n in RunOptions.model_fields if hasattr(args, n)}
    return RunOptions.parse({**given, **overrides})
