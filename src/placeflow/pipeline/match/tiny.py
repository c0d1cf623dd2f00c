"""A tiny fuzzy pass (a handful of places, a ten-row run's) asked in polars whether any two of
its places could pair at all, before the pass opens a DuckDB of its own (#47).

Every candidate pair of the pass shares a capped block key (`features.BLOCKS`, a key nulled
where its block is too big) and keeps the hard rules each blocking rule carries
(`model.BLOCKING_HARD_RULES`: countries, street numbers, distance). Here the keys are taken
uncapped and only the countries and street numbers are tested, with the rules' own null
handling: every pair the pass could score is among the pairs found here. So when none is found,
the pass has no candidate, merges nothing and counts nothing, and is answered without its
DuckDB; when one is found, the whole pass runs as before. This never merges anything itself:
it only leaves out a pass that could not have merged anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

import polars as pl

from placeflow.pipeline.match.features import BLOCKS, features

TINY_PASS = 200
"""Places (known ones with them) up to which a pass is first asked here: each block key's join
is of these places with themselves, at most TINY_PASS² rows."""


def held(
    batches: Iterable[pl.DataFrame], most: int = TINY_PASS
) -> tuple[Iterator[pl.DataFrame], list[pl.DataFrame] | None]:
    """The batches (the same ones, in order, to be staged) and, when they hold `most` places or
    fewer, those batches held in a list (else None: only the first few were read)."""
    read: list[pl.DataFrame] = []
    count = 0
    rest = iter(batches)
    for batch in rest:
        read.append(batch)
        count += batch.height
        if count > most:
            return chain(read, rest), None
    return iter(read), read


def may_pair(batches: list[pl.DataFrame]) -> bool:
    """Whether two of the places could meet a blocking rule: they share an uncapped block key,
    and neither their countries nor their street numbers differ (a null differs from nothing)."""
    frames = [features(b, capped=False, marked=False) for b in batches if b.height]
    if sum(f.height for f in frames) < 2:
        return False
    places = pl.concat(frames).select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("i"), "country", "street_number", *BLOCKS
    )
    for key in BLOCKS:
        side = places.select("i", "country", "street_number", key).drop_nulls(key)
        pairs = side.join(side, on=key, suffix="_r").filter(
            (pl.col("i") < pl.col("i_r")) & _agree("country") & _agree("street_number")
        )
        if pairs.height:
            return True
    return False


def _agree(column: str) -> pl.Expr:
    """A hard rule's test of a column: either side null, or both the same."""
    left, right = pl.col(column), pl.col(f"{column}_r")
    return left.is_null() | right.is_null() | (left == right)
