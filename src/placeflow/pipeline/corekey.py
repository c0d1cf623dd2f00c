"""core_key: a place's identity without region and postcode, so a newly filled field is no
new place.

A place_key hashes every identity field, so mapping a column later (`--map region=State`) gives
every place a new key, and a rerun would buy every outcome again. The core key hashes the same
identity with region and postcode left empty; the fresh stage matches on it as a fallback, and
only against an earlier place whose region and postcode were empty or the same (a newly filled
field, never a changed one). It is stored with run_rows and run_places.
"""

from __future__ import annotations

import polars as pl

from placeflow.pipeline.placekey import digest_keys, identity_columns, identity_text

CORE_VERSION = "core1"
LEFT_OUT = ("id_region", "id_postcode")


def keys_and_cores(places: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """(place_key, core_key) of each row of a normalised places frame; identity built once."""
    identity = identity_columns(places)
    keys = digest_keys(identity_text(identity)).rename("place_key")
    core = identity.with_columns([pl.lit(None, pl.String).alias(c) for c in LEFT_OUT])
    texts = pl.lit(CORE_VERSION) + identity_text(core).to_frame("k").get_column("k")
    cores = digest_keys(pl.select(texts).to_series()).str.replace("^pk_", "ck_")
    return keys, cores.rename("core_key")
