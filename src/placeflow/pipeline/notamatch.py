"""Pairs of places a person marked as different (`not_a_match`): the fuzzy pass never merges
them, in this run or any later one; and what a person reviews before marking them, the merges
a run made with their evidence (`merges`).

`placeflow not-a-match A B` takes what a user can see of a row, resolved against `run_rows`:

    FILE:ROW    a row of an input file (its path as the run read it, or only its name), the
                data row number as `placeflow rows` shows it (header excluded)
    id:VALUE    a row whose id column (`source_id`) holds VALUE
    KEY         a place key as the warehouse shows it: a row's own key (`run_rows.own_key`,
                `run_matches.own_key`) or the place it became (`place_key`)

A reference names the newest run that read such a row unless a run is given. Each side becomes
the row's own key (the place of its own fields, before a merge): that is what the fuzzy pass
compares, so the pair is kept apart from then on. A reference no row answers is refused with
exit code 2 (`UnknownReference`), as are two references to one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from placeflow.errors import OptionsError, UnknownReference
from placeflow.store.dbfile import has_table
from placeflow.store.warehouse import sql_text
from placeflow.support.arrow import fetched

PAIR_SCHEMA = {"place_key_a": pl.String, "place_key_b": pl.String}
_FILE_ROW = re.compile(r"^(?P<file>.+):(?P<row>[0-9]+)$")


@dataclass(frozen=True)
class Resolved:
    """A reference and the row it named: the row's own key, and where it was read."""

    reference: str
    own_key: str
    run_id: str
    source_file: str
    source_row: int
    source_id: str | None


def not_a_match_pairs(con: duckdb.DuckDBPyConnection | None) -> pl.DataFrame | None:
    """Every marked pair (place_key_a < place_key_b); None without a warehouse or a table."""
    if con is None:
        return None
    if not has_table(con, "not_a_match"):  # read-only, before its migration to 004
        return None
    rows = con.execute("select place_key_a, place_key_b from not_a_match").fetchall()
    return pl.DataFrame(rows, schema=PAIR_SCHEMA, orient="row")


def resolve(con: duckdb.DuckDBPyConnection, reference: str, run_id: str | None = None) -> Resolved:
    """The row `reference` names (see the module), in `run_id` or the newest run that has it."""
    text = reference.strip()
    by, file, row, value = "key", None, None, text
    value_: str | None
    if text.lower().startswith("id:"):
        by, value = "id", text[3:]
    elif (found := _FILE_ROW.match(text)) is not None and not _is_key(con, text):
        by, file, row = "file_row", found["file"], int(found["row"])
    value_ = None if by == "file_row" else value
    rows = con.execute(
        sql_text("queries/row_reference"),
        {"by": by, "file": file, "row": row, "value": value_, "run_id": run_id},
    ).fetchall()
    if not rows:
        where = f" in run {run_id}" if run_id else ""
        raise UnknownReference(
            f"no row of this warehouse{where} is {reference!r}: name one as FILE:ROW (the data"
            " row number, header excluded), id:VALUE (the file's id column) or by its place key"
            " (`placeflow rows RUN` and `placeflow matches RUN` show all three)"
        )
    own_key, found_run, source_file, source_row, source_id = rows[0]
    return Resolved(text, str(own_key), str(found_run), str(source_file), int(source_row),
                    None if source_id is None else str(source_id))  # fmt: skip


def _is_key(con: duckdb.DuckDBPyConnection, text: str) -> bool:
    """Whether `text` is a key some row has (a key never holds a colon, but be sure); not the
    rows of a run still being opened (run_openings)."""
    found = con.execute(
        "select exists (select 1 from run_rows"
        " anti join run_openings on run_rows.run_id = run_openings.run_id"
        " where run_rows.own_key = $k or run_rows.place_key = $k)",
        {"k": text},
    ).fetchall()
    return bool(found[0][0])


def _pair(key_a: str, key_b: str) -> tuple[str, str]:
    a, b = sorted((key_a.strip(), key_b.strip()))
    if not a or a == b:
        raise OptionsError(
            "not-a-match takes two different places: both name the same place key (rows with"
            " the very same fields are one place to placeflow, whatever the fuzzy pass says)"
        )
    return a, b


def mark_not_a_match(
    con: duckdb.DuckDBPyConnection,
    key_a: str,
    key_b: str,
    *,
    note: str | None = None,
    now: datetime,
) -> tuple[str, str]:
    """Record that two places differ; the pair, sorted. Marked again, the time is the latest
    and the notes are kept: a new note is added after the ones before ("; "), none keeps them."""
    a, b = _pair(key_a, key_b)
    con.execute(
        "insert into not_a_match (place_key_a, place_key_b, noted_at, note) values (?, ?, ?, ?)"
        " on conflict (place_key_a, place_key_b) do update set noted_at = excluded.noted_at,"
        " note = case when excluded.note is null then not_a_match.note"
        " when not_a_match.note is null or not_a_match.note = excluded.note then excluded.note"
        " when contains(not_a_match.note, excluded.note) then not_a_match.note"
        " else not_a_match.note || '; ' || excluded.note end",
        [a, b, now, note],
    )
    return a, b


def note_of(con: duckdb.DuckDBPyConnection, pair: tuple[str, str]) -> str | None:
    """The notes kept for a marked pair (None when it has none or is not marked)."""
    row = con.execute(
        "select note from not_a_match where place_key_a = ? and place_key_b = ?", list(pair)
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def undo_not_a_match(con: duckdb.DuckDBPyConnection, key_a: str, key_b: str) -> str | None:
    """Take a not-a-match mark back: later runs may merge the two places again. The notes the
    pair had (None when it had none); `UnknownReference` when the pair was never marked."""
    pair = _pair(key_a, key_b)
    row = con.execute(
        "delete from not_a_match where place_key_a = ? and place_key_b = ? returning note",
        list(pair),
    ).fetchone()
    if row is None:
        raise UnknownReference(
            f"{pair[0]} and {pair[1]} are not marked as not a match: nothing to undo"
        )
    return None if row[0] is None else str(row[0])


def merges(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """The merges the fuzzy pass made in `run_id`, one row per merged place: both sides' file,
    row, id, name, street, city and phone, the probability and the evidence (`run_matches`)
    (sql/queries/run_merges.sql); empty for a run without any."""
    found: pl.DataFrame = fetched(
        con.sql(sql_text("queries/run_merges"), params={"run_id": run_id})
    )
    return found
