"""Text PostgreSQL would refuse, made safe on its way there: one bad value never fails a load.

PostgreSQL's text cannot hold a NUL character, and its jsonb refuses the JSON escape ``\\u0000``
and an unpaired UTF-16 surrogate escape (``\\ud800`` alone): any one of them fails the COPY,
and since every table of an export goes in one transaction, the whole export. The service's
answers are not ours to vouch for (a phone number came back holding a NUL byte), so each Arrow
batch on its way to PostgreSQL is checked column by column (vectorised: Python touches only the
values that need it), and in those values each such character becomes U+FFFD, the Unicode
replacement character (``\N{REPLACEMENT CHARACTER}``). Parquet and Delta keep values as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no stubs or py.typed
import pyarrow.compute as pc  # type: ignore[import-untyped]  # the same

NUL = "\x00"
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
_JSON_UNSAFE = r"\\u0000|\\u[dD][89abAB]"
"""JSON text that may hold what jsonb refuses: a NUL escape, or a surrogate escape (a paired
one passes through the repair unchanged in meaning)."""


def safe_text(value: str) -> str:
    """`value` with each NUL and each unpaired surrogate replaced by U+FFFD."""
    value = value.replace(NUL, REPLACEMENT)
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {safe_text(k): _clean(v) for k, v in value.items()}
    return value


def safe_json(text: str) -> str:
    """JSON text whose strings hold no NUL and no unpaired surrogate (jsonb takes it)."""
    try:
        parsed = json.loads(text)
    except ValueError:  # not JSON after all: PostgreSQL says so, as for any other value
        return safe_text(text)
    return json.dumps(_clean(parsed), ensure_ascii=False, separators=(",", ":"))


@dataclass
class Tally:
    """Values made safe, per column, over the batches of one table."""

    columns: dict[str, int]

    @property
    def values(self) -> int:
        return sum(self.columns.values())


def _safe_column(
    column: pa.Array | pa.ChunkedArray, *, json_text: bool
) -> tuple[pa.Array | pa.ChunkedArray, int]:
    """The column made safe, and how many of its values changed."""
    has_nul = pc.match_substring(column, NUL)
    bad = pc.or_(has_nul, pc.match_substring_regex(column, _JSON_UNSAFE)) if json_text else has_nul
    count = int(pc.sum(pc.cast(bad, pa.int64())).as_py() or 0)
    if not count:
        return column, 0
    if not json_text:
        return pc.replace_substring(column, NUL, REPLACEMENT), count
    values = column.to_pylist()
    flags = bad.to_pylist()
    fixed = [
        safe_json(v) if flag and v is not None else v for v, flag in zip(values, flags, strict=True)
    ]
    return pa.array(fixed, type=column.type), count


def safe_batches(
    reader: pa.RecordBatchReader, json_columns: frozenset[str], tally: Tally
) -> pa.RecordBatchReader:
    """`reader`'s batches with every string column made safe for PostgreSQL (`json_columns`
    as JSON text); what changed is counted in `tally`."""
    schema = reader.schema
    strings = [
        i
        for i, f in enumerate(schema)
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            arrays = list(batch.columns)
            for i in strings:
                name = schema.field(i).name
                arrays[i], count = _safe_column(arrays[i], json_text=name in json_columns)
                if count:
                    tally.columns[name] = tally.columns.get(name, 0) + count
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())
