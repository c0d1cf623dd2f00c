"""Small whole-column helpers that keep the costly string work off rows that do not need it.

Regex replacement and Unicode normalisation cost several times a plain scan, even where nothing
matches; these helpers run them only on the rows (or the distinct values) that need them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import polars as pl

ExprFn = Callable[[pl.Expr], pl.Expr]
T = TypeVar("T")


def apply(values: pl.Series, expr: ExprFn) -> pl.Series:
    """`expr` over a whole series (named as the input)."""
    return values.to_frame("v").select(expr(pl.col("v"))).to_series().rename(values.name)


def patched(values: pl.Series, where: pl.Series, expr: ExprFn) -> pl.Series:
    """`expr` applied only where `where` is true; other values unchanged."""
    at = where.fill_null(False).arg_true()
    if at.len() == 0:
        return values
    return values.clone().scatter(at, apply(values.gather(at), expr))


def per_value(values: pl.Series, fn: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """`fn` computed once per distinct value and spread back (for repetitive columns)."""
    distinct = values.drop_nulls().unique()
    mapped = fn(distinct)
    out = values.replace_strict(distinct, mapped, default=None, return_dtype=mapped.dtype)
    return out.rename(values.name)


PARALLEL_FROM_ROWS = 50_000
"""Below this many rows, starting threads costs more than it saves."""


def parallel(tasks: Mapping[str, Callable[[], T]], *, rows: int) -> dict[str, T]:
    """Run independent column computations on threads (polars releases the GIL while working)."""
    workers = min(len(tasks), os.cpu_count() or 1)
    if workers <= 1 or rows < PARALLEL_FROM_ROWS:
        return {name: task() for name, task in tasks.items()}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="placeflow-col") as pool:
        futures = {name: pool.submit(task) for name, task in tasks.items()}
        return {name: future.result() for name, future in futures.items()}
