"""Holding requests to the spec's limits before they are sent: a bad row is named, never sent."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from placeflow.api.errors import FieldProblem, RequestRejected

M = TypeVar("M", bound=BaseModel)
Row = Mapping[str, Any] | BaseModel


def field_path(loc: Sequence[Any], prefix: str = "") -> str:
    """The spec's name of a field: ``('pois', 17, 'poi_name')`` -> ``pois[17].poi_name``.

    The one formatter of error locations, used by the client's checks, its reading of the
    service's 422 bodies (a leading ``body`` is dropped) and the sandbox's 400 details.
    """
    parts = list(loc)
    if parts and parts[0] == "body":
        parts = parts[1:]
    out = prefix
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "body"


def _as_data(row: object) -> object:
    return row.model_dump() if isinstance(row, BaseModel) else row


def _problems(exc: ValidationError, prefix: str = "") -> list[FieldProblem]:
    """Each error of a failed validation, named by its field path."""
    return [
        FieldProblem(field_path(e["loc"], prefix), e["msg"], e["type"])
        for e in exc.errors(include_url=False, include_input=False)
    ]


def check_one(
    model: type[M], row: object, *, prefix: str = ""
) -> tuple[M | None, list[FieldProblem]]:
    """`row` validated as `model`, or None and the problems, each named by its field path."""
    try:
        return model.model_validate(_as_data(row)), []
    except ValidationError as exc:
        return None, _problems(exc, prefix)


def check_rows(
    model: type[M], rows: Iterable[Row], *, prefix: str = "pois"
) -> tuple[list[M], list[FieldProblem]]:
    """Every row validated as `model`: the valid ones, and the problems of the others.

    The pipeline uses this to split rejects from a chunk before it plans any request.
    """
    valid: list[M] = []
    problems: list[FieldProblem] = []
    for index, row in enumerate(rows):
        parsed, found = check_one(model, row, prefix=f"{prefix}[{index}]")
        if parsed is None:
            problems.extend(found)
        else:
            valid.append(parsed)
    return valid, problems


def require_one(model: type[M], row: object, *, endpoint: str) -> M:
    """`row` as a valid `model`, or `RequestRejected` naming every bad field."""
    parsed, problems = check_one(model, row)
    if parsed is None:
        raise RequestRejected(endpoint, problems)
    return parsed


def require_rows(
    model: type[M], rows: Iterable[Row], *, endpoint: str, minimum: int, maximum: int
) -> list[M]:
    """All `rows` valid as `model` and their number within limits, or `RequestRejected`."""
    items = list(rows)
    valid, problems = check_rows(model, items)
    if not minimum <= len(items) <= maximum:
        problems.insert(
            0,
            FieldProblem(
                "pois", f"needs {minimum} to {maximum} items, got {len(items)}", "too_many_or_few"
            ),
        )
    if problems:
        raise RequestRejected(endpoint, problems)
    return valid


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many short-lived, acyclic objects are built (the
    models of a 10,000-row body): collections set off by their sheer number otherwise double
    the cost. Reference counting still frees every one of them at once."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def require_json(model: type[BaseModel], body: bytes, *, endpoint: str) -> None:
    """Check `body` (JSON text) against `model` in one pass, or raise `RequestRejected` naming
    every bad field by its path (``pois[17].poi_name``). The parsed models are let go inside
    the collector's pause, so it never has to look at them."""
    try:
        with gc_paused():
            model.model_validate_json(body)
    except ValidationError as exc:
        raise RequestRejected(endpoint, _problems(exc)) from None


def encode(payload: BaseModel | Mapping[str, Any]) -> bytes:
    """The request body, serialised once so that every retry sends the identical bytes."""
    data = (
        payload.model_dump(mode="json", exclude_none=True)
        if isinstance(payload, BaseModel)
        else payload
    )
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def dump_rows(rows: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [row.model_dump(mode="json", exclude_none=True) for row in rows]
