"""Issue 12 through `placeflow.run` against a loopback sandbox: a file with real shapes (BOM,
alpha-3 countries, CJK text, lost ZIP zeros, a flipped sign, odd headers) mapped and repaired;
the user's rows back with outcomes (`placeflow rows`), read-only SQL (`placeflow query`),
places that keep failing held back, and a newly mapped region that re-keys nothing it need not."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

import placeflow
from placeflow.cli.main import main
from placeflow.emulator import Sandbox
from placeflow.options import RunOptions
from placeflow.reporting.summary import text_summary
from placeflow.runner.target import Target
from placeflow.state.checks import run_checks
from tests.sandbox_target import served as served_sandbox

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

KEY = "sk_rows_paid_key_5678"
FIXTURE = Path(__file__).parent / "fixtures" / "real_shapes_stores.csv"
MAPPED_BY_A_PERSON = {
    "id": "Store Number", "poi_name": "Store Name", "street": "Street Address", "city": "City",
    "region": "State/Province", "country": "Country", "postcode": "Postcode",
    "latitude": "Latitude", "longitude": "Longitude", "phone": "Phone Number",
}  # fmt: skip


def serve(fail_rate: float = 0.0) -> Iterator[tuple[Sandbox, Target]]:
    with served_sandbox(KEY, fail_rate=fail_rate) as pair:
        yield pair


@pytest.fixture
def served() -> Iterator[tuple[Sandbox, Target]]:
    yield from serve()


@pytest.fixture
def failing() -> Iterator[tuple[Sandbox, Target]]:
    yield from serve(fail_rate=1.0)


def requests(sandbox: Sandbox) -> int:
    """Requests the sandbox itself answered, over every endpoint."""
    counts = sandbox.stats()["requests"].values()  # per route, per status code
    return sum(int(n) for by_code in counts for n in by_code.values())


def test_real_shapes_are_mapped_repaired_and_counted(
    served: tuple[Sandbox, Target], tmp_path: Path
) -> None:
    """BOM, alpha-3, CJK, `Store Number`, `State/Province`: every column a person would map is
    mapped (the phone for the fuzzy dedupe), the rest listed as ignored; lost ZIP zeros
    restored and the flipped sign repaired, counted, and what the sandbox received carries the
    repaired values."""
    sandbox, target = served
    summary = placeflow.run(
        [str(FIXTURE)], options=RunOptions(route="sync"), db=tmp_path / "wh.duckdb", target=target
    )
    assert summary.status == "completed" and summary.rejected == 0 and summary.submitted == 8
    seen = summary.inputs["files"][str(FIXTURE)]
    assert seen["columns"] == MAPPED_BY_A_PERSON
    assert seen["ignored"] == ["Ownership Type", "Timezone"]
    normalized = summary.stages["normalize"]
    assert normalized.postcodes_restored == 4 and normalized.coordinates_repaired == 1
    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        stored = con.execute("select request from run_places").fetchall()
        rows = con.execute(
            "select source_id, postcode, longitude, note from run_rows order by row_ord"
        ).fetchall()
    by_name = {r["poi_name"]: r for r in (json.loads(s[0]) for s in stored)}
    assert by_name["Harbor Coffee"]["postcode"] == "00901"
    assert by_name["Mill Street Roasters"]["postcode"] == "02108"
    assert by_name["Gateway Cafe"]["longitude"] == pytest.approx(-90.19)
    assert by_name["星巴克 国贸店"]["country"] == "CN"
    assert by_name["Café Lumière"]["country"] == "FR"
    assert rows[0][0] == "10001-1" and rows[2][2] == pytest.approx(-90.19) and rows[2][3]
    assert sandbox.stats()["keys"][KEY]["credits"]["charged"] == summary.charged > 0


def test_rows_gives_every_input_row_back_with_its_outcome(
    served: tuple[Sandbox, Target], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`placeflow rows RUN_ID --out` writes every input row (its own columns first) with its
    disposition, reject reason and outcome; `placeflow query` reads the warehouse read-only."""
    _, target = served
    data = tmp_path / "in.csv"
    shutil.copy(FIXTURE, data)
    with data.open("a", encoding="utf-8") as f:
        f.write(
            # the same store listed again (its number too: two store numbers are two stores)
            "10001-1,Harbor Coffee,Company Owned,1 Main St,San Juan,PR,PRI,901,,,-66.1,18.45\r\n"
        )
        f.write("bad,,Licensed,,,,USA,,,,,\r\n")
    db = tmp_path / "wh.duckdb"
    summary = placeflow.run([str(data)], options=RunOptions(route="sync"), db=db, target=target)
    assert summary.rejected == 1 and summary.rejected_by_field == {"poi_name": 1}
    shown = next(line for line in text_summary(summary).splitlines() if "rejected" in line)
    assert shown.split()[1:] == ["1", "(1", "by", "poi_name;", "each", "row's", "reason:",
                                 "placeflow", "rows", summary.run_id, "--only", "rejected", "--out",
                                 "FILE)"]  # fmt: skip
    out = tmp_path / "rows.csv"
    assert main(["rows", summary.run_id, "--db", str(db), "--out", str(out)]) == 0
    back = pl.read_csv(out, infer_schema=False)
    assert back.height == 10
    assert back.columns[:3] == ["Store Number", "Store Name", "Ownership Type"]
    assert back.get_column("Store Number").to_list()[-2:] == ["10001-1", "bad"]
    dup = back.row(8, named=True)
    assert dup["disposition"] == "duplicate"
    assert dup["note"].startswith(f"duplicate of row 1 of {data}; postcode 901 restored")
    assert dup["success"] == "true" and dup["operational_status"]
    bad = back.row(9, named=True)
    assert bad["disposition"] == "rejected" and bad["reject_reason"]
    assert back.row(0, named=True)["postcode"] == "00901"
    only = tmp_path / "rejected.csv"
    assert main(["rows", summary.run_id, "--db", str(db), "--only", "rejected", "--out",
                 str(only)]) == 0  # fmt: skip
    rejected = pl.read_csv(only, infer_schema=False)
    assert rejected.height == 1 and rejected.row(0, named=True) == bad
    parquet = tmp_path / "rows.parquet"
    assert main(["rows", summary.run_id, "--db", str(db), "--out", str(parquet)]) == 0
    assert pl.read_parquet(parquet).height == 10
    capsys.readouterr()
    sql = "select disposition, count(*) as n from run_row_outcomes group by 1 order by 1"
    assert main(["query", sql, "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"disposition": "duplicate", "n": 1},
        {"disposition": "rejected", "n": 1},
        {"disposition": "submitted", "n": 8},
    ]
    assert main(["query", "delete from runs", "--db", str(db)]) == 2
    assert "read-only" in capsys.readouterr().err.lower()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from runs").fetchall() == [(1,)]
    assert main(["query", "select 1 as one", "--db", str(db), "--csv"]) == 0
    assert capsys.readouterr().out == "one\n1\n"
    assert main(["rows", "run_nope", "--db", str(db), "--out", str(out)]) == 2


def test_places_that_keep_failing_are_held_back(
    failing: tuple[Sandbox, Target], tmp_path: Path
) -> None:
    """After three failures in a row a place is held back (held_failing, counted), not sent,
    until --retry-failed; the sandbox sees no request for it in between."""
    sandbox, target = failing
    db = tmp_path / "wh.duckdb"
    for _ in range(3):
        s = placeflow.run([str(FIXTURE)], options=RunOptions(route="sync"), db=db, target=target)
        assert s.failed == 8 and s.held_failing == 0
    before = requests(sandbox)
    held = placeflow.run([str(FIXTURE)], options=RunOptions(route="sync"), db=db, target=target)
    assert held.held_failing == 8 and held.submitted == 0
    assert requests(sandbox) == before  # nothing reached the sandbox
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select disposition, note from run_rows where run_id = ?", [held.run_id]
        ).fetchall()
    assert {d for d, _ in rows} == {"held_failing"}
    assert all("failed 3 times in a row" in n and "--retry-failed" in n for _, n in rows)
    again = placeflow.run(
        [str(FIXTURE)], options=RunOptions(route="sync", retry_failed=True), db=db, target=target
    )
    assert again.submitted == 8 and requests(sandbox) > before


def test_a_newly_mapped_region_buys_nothing_again(
    served: tuple[Sandbox, Target], tmp_path: Path
) -> None:
    """Run a file without its region, then map the region: keys change, but the places are
    matched to the ones the warehouse knows (or found by core key), nothing is sent, and the
    run says why; when those outcomes are stale the places are sent again, with a warning."""
    sandbox, target = served
    data = tmp_path / "stores.csv"
    text = FIXTURE.read_text(encoding="utf-8-sig").replace("State/Province", "Area")
    data.write_text(text, encoding="utf-8")
    db = tmp_path / "wh.duckdb"
    first = placeflow.run([str(data)], options=RunOptions(route="sync"), db=db, target=target)
    assert first.submitted == 8 and "Area" in first.inputs["files"][str(data)]["ignored"]
    charged = sandbox.stats()["keys"][KEY]["credits"]["charged"]
    second = placeflow.run(
        [str(data)], options=RunOptions(route="sync", mapping={"region": "Area"}),
        db=db, target=target,
    )  # fmt: skip
    assert second.submitted == 0 and second.skipped_fresh == 8
    assert sandbox.stats()["keys"][KEY]["credits"]["charged"] == charged
    assert any(
        "8 of 8 places were run before under other keys" in w and "8 use their earlier" in w
        for w in second.inputs["warnings"]
    )
    with duckdb.connect(str(db), read_only=True) as con:
        keys = con.execute(  # keyed anew, each answered by the first run's outcome
            "select count(*) filter (where outcome_key in"
            "  (select place_key from run_places where run_id = $first)),"
            " count(*) filter (where success),"
            " (select count(*) from run_rows where run_id = $second and own_key <> place_key)"
            " from run_row_outcomes where run_id = $second",
            {"first": first.run_id, "second": second.run_id},
        ).fetchall()
        assert run_checks(con) == {} or all(v == 0 for v in run_checks(con).values())
    assert keys == [(8, 8, 8)]
    stale = placeflow.run(
        [str(data)], options=RunOptions(route="sync", mapping={"region": "Area"}, max_age_days=0),
        db=db, target=target,
    )  # fmt: skip
    assert stale.submitted == 8  # nothing fresh: sent again, but not silently
    assert any("0 use their earlier fresh outcomes, 8 are sent again" in w
               for w in stale.inputs["warnings"])  # fmt: skip


def test_estimate_shows_the_mapping_and_warns_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`estimate --json` carries per file the columns used and ignored; a header name given
    twice is a warning on stderr; the text form lists `field <- column` lines."""
    twice = tmp_path / "twice.csv"
    twice.write_text("name,lat,lat,lon,country\nA,1,2,3,US\n", encoding="utf-8")
    args = [str(FIXTURE), str(twice), "--db", str(tmp_path / "none.duckdb")]
    assert main(["estimate", *args, "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["inputs"]["files"][str(FIXTURE)]["columns"] == MAPPED_BY_A_PERSON
    assert out["inputs"]["files"][str(twice)]["ignored"] == []
    assert "'lat' more than once" in captured.err
    assert main(["estimate", *args]) == 0
    text = capsys.readouterr().out
    assert "region <- 'State/Province'" in text and "ignored: 'Ownership Type'" in text
