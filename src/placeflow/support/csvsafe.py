"""Every CSV placeflow writes goes through here: no cell a spreadsheet runs as a formula, and no
control or bidi character from a server, an input file or a proxy.

- Formulas (OWASP's rule against CSV injection): a text cell, or a column name, that starts with
  = + - @ tab or CR gets a leading single quote (a place named `=HYPERLINK(...)`, a phone the
  service sent as `+1 555 ...`, a website `+cmd|...`). Numbers stay numbers: only text is
  touched.
- Control and bidi characters (NUL, ESC, the other C0 and C1 controls, U+202A-U+202E,
  U+2066-U+2069, U+200E, U+200F, U+061C) become U+FFFD, the replacement character, as on a
  terminal (`placeflow.support.text.printable`): an ESC sequence or a right-to-left override
  in a cell would show the reader something other than what is there. Tab and newline stay
  (a quoted cell may hold them).

`csv_safe` makes a polars frame safe (columnar: `rows --out`, `query --csv`, `matches --out`);
`csv_cell` one value (the few rows of a run's published `changes.csv` and `rejects.csv`).
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

FORMULA_START = r"^[=+\-@\t\r]"
"""A text cell a spreadsheet may run as a formula starts with one of = + - @ tab or CR."""
UNSAFE_CHARS = (
    r"[\x00-\x08\x0B-\x1F\x7F-\x9F\x{061C}\x{200E}\x{200F}\x{202A}-\x{202E}\x{2066}-\x{2069}]"
)
"""Control characters but tab and newline, and the bidi controls, as a polars (Rust) pattern."""
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""The same characters, for Python's re."""
REPLACEMENT = "\ufffd"


def csv_cell(value: Any) -> Any:
    """A value as placeflow writes it to CSV: text with its unsafe characters replaced and a
    formula made inert; any other value as it is."""
    if not isinstance(value, str):
        return value
    text = _UNSAFE.sub(REPLACEMENT, value)
    return f"'{text}" if re.match(FORMULA_START, text) else text


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` as placeflow writes it to CSV: nested columns as text, every text cell and
    column name made safe (`csv_cell`), columnar."""
    flat = frame.with_columns(
        [pl.col(c).cast(pl.String) for c, t in frame.schema.items() if t.is_nested()]
    )
    cleaned = flat.with_columns(
        pl.col(c).str.replace_all(UNSAFE_CHARS, REPLACEMENT)
        for c, t in flat.schema.items()
        if t == pl.String
    )
    quoted = cleaned.with_columns(
        pl.when(pl.col(c).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(c))
        .otherwise(pl.col(c))
        .alias(c)
        for c, t in cleaned.schema.items()
        if t == pl.String
    )
    names = {c: csv_cell(c) for c in quoted.columns}
    return quoted.rename({old: new for old, new in names.items() if new != old})
