"""The README's sample run, then `placeflow export` to each destination: what Parquet files, a
Delta table (read by polars and deltalake) and PostgreSQL hold, against what DuckDB holds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

import placeflow
from placeflow.cli.export import run as cli
from placeflow.emulator import FaultConfig
from placeflow.exporters.export import DEFAULT_TABLES, TABLES
from placeflow.fields import RateLimits
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.runner.refresh import refresh
from placeflow.runner.research import ResearchOptions, research
from tests.pgserver import PgServer
from tests.sandbox_target import sandbox_target, served

SAMPLES = sorted(str(p) for p in (Path(__file__).parents[2] / "data" / "samples").glob("*.csv"))
KEY = "sk_sample_exports_0000000000000000"
INPUT_ROWS = 864
"""Data rows of the two sample files: the crosswalk has one per input row."""
RESEARCHED = 12


def duck(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def keyed(table: str) -> str:
    return ", ".join(TABLES[table].key)


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's sample run (enrich, the embedded-sandbox way, here a served sandbox), then a
    research of a dozen of its places: a warehouse as a user has it."""
    db = tmp_path_factory.mktemp("sample") / "placeflow.duckdb"
    with served(KEY, rate_window_scale=0.05) as (_, target):
        summary = placeflow.run(SAMPLES, db=db, target=target)
        assert summary.status == "completed" and summary.rows_read == INPUT_ROWS
        limits = RateLimits.for_tier("paid", window_scale=0.05)
        scaled = sandbox_target(target.base_url, KEY, limits)
        spec = ResearchSpec(build_specs(("cuisine:enum:italian|thai|other",)))
        done = research(
            SAMPLES, ResearchOptions(spec=spec, sample=RESEARCHED), target=scaled, db=db,
            sleep=lambda _: None,
        )  # fmt: skip
    assert done.status == "completed", done
    return db


@dataclass(frozen=True)
class Reader:
    """How a test reads one kind of destination back: the URL to export to, and a table's
    rows as the destination holds them now (the current row per key), as a polars frame."""

    url: str
    read: Callable[[str], pl.DataFrame]


def parquet_reader(root: Path) -> Reader:
    def read(table: str) -> pl.DataFrame:
        files = sorted(root.glob(f"{table}/*/*.parquet"))
        if not files:
            return pl.DataFrame()
        with duckdb.connect() as con:
            paths = [str(f) for f in files]
            src = f"read_parquet({paths!r}, hive_partitioning = false)"
            # Files accumulate versions: the newest by the incremental column is current.
            return con.sql(
                f"select * from {src} qualify row_number() over (partition by {keyed(table)}"
                f" order by {TABLES[table].cursor} desc) = 1"
            ).pl()

    return Reader(root.as_uri(), read)


def delta_reader(root: Path) -> Reader:
    def read(table: str) -> pl.DataFrame:
        frame = pl.read_delta(str(root / table))
        from deltalake import DeltaTable  # the other reader: delta-rs itself

        assert DeltaTable(str(root / table)).to_pyarrow_table().num_rows == frame.height
        return frame

    return Reader(f"delta://{root}", read)


def postgres_reader(server: PgServer) -> Reader:
    def read(table: str) -> pl.DataFrame:
        uri = server.url(with_password=True)  # the test's own read, not an export
        return pl.read_database_uri(f"select * from {table}", uri, engine="adbc")

    return Reader(server.url(), read)


@pytest.fixture(params=["parquet", "delta", "postgresql"])
def destination(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Reader]:
    if request.param == "parquet":
        yield parquet_reader(tmp_path / "lake")
    elif request.param == "delta":
        yield delta_reader(tmp_path / "delta")
    else:
        server: PgServer = request.getfixturevalue("pg_db")
        monkeypatch.setenv("PGPASSWORD", server.password)
        yield postgres_reader(server)


def export(db: Path, url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    """`placeflow export --db DB --to URL --json`: rows sent per table."""
    capsys.readouterr()
    assert cli(["export", "--db", str(db), "--to", url, "--json"]) == 0
    return {t["table"]: t["rows"] for t in json.loads(capsys.readouterr().out)["tables"]}


def test_sample_run_exports_identity_crosswalk_and_research(
    sample_db: Path, tmp_path: Path, destination: Reader, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the sample run: places_latest carries each place's name, the crosswalk one row per
    input row with the user's id, the research tables their answers, every table DuckDB's count;
    a second export sends nothing; after a refresh the changed places are updated in place."""
    db = tmp_path / "placeflow.duckdb"
    shutil.copy(sample_db, db)
    sent = export(db, destination.url, capsys)
    assert set(sent) == set(DEFAULT_TABLES)
    for table in DEFAULT_TABLES:
        ((count,),) = duck(db, f"select count(*) from {table}")
        landed = destination.read(table)
        assert sent[table] == count == landed.height, table
        if count:
            assert landed.select(TABLES[table].key).n_unique() == count, table
    places = destination.read("places_latest")
    assert places.get_column("poi_name").null_count() == 0
    named = dict(duck(db, "select place_key, poi_name from places_latest"))
    assert dict(places.select("place_key", "poi_name").iter_rows()) == named
    crosswalk = destination.read("crosswalk")
    assert crosswalk.filter(pl.col("run_id").str.starts_with("run_")).height == INPUT_ROWS
    ids = duck(db, "select run_id, row_ord, source_id, own_key, place_key from run_rows")
    assert sorted(crosswalk.select("run_id", "row_ord", "source_id", "own_key", "place_key")
                  .iter_rows()) == sorted(ids)  # fmt: skip
    assert crosswalk.get_column("source_id").null_count() == 0
    assert crosswalk.filter(pl.col("disposition") != "rejected")["own_key"].null_count() == 0
    assert destination.read("research_answers").height >= RESEARCHED
    assert destination.read("research_latest").height >= RESEARCHED

    assert sum(export(db, destination.url, capsys).values()) == 0

    with served(KEY, epoch=1, fail_rate=0.0) as (_, target):
        again = refresh(db=db, older_than="0", limit=25, target=target)
    assert again.status == "completed" and again.submitted == 25
    after = export(db, destination.url, capsys)
    assert after["places_latest"] == 25
    places = destination.read("places_latest")
    assert places.height == duck(db, "select count(*) from places_latest")[0][0]
    newest = dict(duck(db, "select place_key, run_id from places_latest"))
    assert dict(places.select("place_key", "run_id").iter_rows()) == newest
    assert sum(1 for run_id in newest.values() if run_id == again.run_id) == 25
    assert destination.read("crosswalk").height == duck(db, "select count(*) from run_rows")[0][0]


def test_a_nul_in_a_served_phone_number_exports_to_postgresql(
    tmp_path: Path,
    pg_db: PgServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sandbox returns phone numbers holding a NUL byte: the PostgreSQL export succeeds,
    each such character stored as U+FFFD (text and jsonb), and the summary counts them."""

    db = tmp_path / "placeflow.duckdb"
    with served(KEY, faults=FaultConfig(nul_in_phone_rate=0.2)) as (_, target):
        assert placeflow.run(SAMPLES[1:], db=db, target=target).status == "completed"
    ((with_nul,),) = duck(
        db, "select count(*) from places_latest where contains(phone_number, chr(0))"
    )
    assert with_nul > 0
    capsys.readouterr()
    monkeypatch.setenv("PGPASSWORD", pg_db.password)
    assert cli(["export", "--db", str(db), "--to", pg_db.url(), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    made_safe = {t["table"]: t["made_safe"] for t in summary["tables"]}
    assert made_safe["places_latest"] >= 2 * with_nul  # phone_number and phone_value
    replaced = pg_db.psql(
        "select count(*) from places_latest where position(U&'\\FFFD' in phone_number) > 0"
        " and position(U&'\\FFFD' in phone_value ->> 'number') > 0"
    )
    assert int(replaced) == with_nul
    ((count,),) = duck(db, "select count(*) from places_latest")
    assert int(pg_db.psql("select count(*) from places_latest")) == count
