"""`placeflow research --from-warehouse`: the places a run already loaded, chosen by refresh's
selection, researched over a sandbox on loopback with no input file; the run's typed events;
the CLI's one JSON document."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.cli.research import main
from placeflow.events import (
    ChunkSubmitted,
    CreditsCharged,
    Event,
    RowsLoaded,
    StageFinished,
)
from placeflow.fields import RateLimits
from placeflow.pipeline.account import RunSummary
from placeflow.runner.refresh import WarehouseSource
from placeflow.runner.research import ResearchOptions, research
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

from .conftest import KEY, SCALE, Served, ServeSandbox, ended, places, spec, write_csv

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

PER_ROW = 4  # 3 fields + identity


def loaded_warehouse(tmp_path: Path, sb: Served, n: int) -> tuple[Path, set[str]]:
    """A warehouse built by `placeflow run` of n places (and a duplicate row) from the same
    sandbox; the place_keys its run sent."""
    db = tmp_path / "wh.duckdb"
    csv = write_csv(tmp_path / "loaded.csv", places(n) + places(1))
    target = Target(
        base_url=sb.base_url, api_key=Secret(KEY), label="sandbox",
        limits=RateLimits.for_tier("paid", window_scale=SCALE),
    )  # fmt: skip
    options = placeflow.RunOptions(route="sync", dedupe="exact")  # quick: no job, no fuzzy pass
    summary = placeflow.run([str(csv)], options=options, db=db, target=target)
    assert summary.status == "completed" and summary.submitted == n, summary
    with duckdb.connect(str(db), read_only=True) as con:
        keys = {str(r[0]) for r in con.execute("select place_key from run_places").fetchall()}
    assert len(keys) == n
    return db, keys


def researched(db: Path) -> dict[str, int]:
    """Fields answered per place in research_answers."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select place_key, count(*) from research_answers group by place_key"
        ).fetchall()
    return {str(k): int(n) for k, n in rows}


def test_from_warehouse_researches_each_loaded_place_once_and_a_rerun_buys_nothing(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Every place a run loaded is researched once (the sandbox billed each place's fields
    once), no file given; charge = sandbox's; the same command again charges nothing."""
    sb = serve(fail_rate=0.0)
    db, keys = loaded_warehouse(tmp_path, sb, 12)
    before = sb.credits()["charged"]
    events: list[Event] = []
    source = WarehouseSource(db, older_than=timedelta(0))
    out, code = placeflow_research(source, db, sb.target(), events.append)
    assert code == 0 and out.status == "completed", out
    assert out.submitted == 12 and out.charged == 12 * PER_ROW
    assert sb.credits()["charged"] - before == 12 * PER_ROW
    stats = sb.research()
    assert stats["billed_places"] == 12 and stats["billed_twice"] == []
    assert researched(db) == dict.fromkeys(keys, 3)
    # the run's events tell the same story as the sandbox
    finished = [e.stage for e in events if isinstance(e, StageFinished)]
    assert finished == ["read", "normalize", "dedupe", "fresh", "plan", "budget", "open", "send",
                        "account"]  # fmt: skip
    submitted = [e for e in events if isinstance(e, ChunkSubmitted)]
    assert len(submitted) == stats["requests"]["answered"] == 2
    assert sum(e.rows for e in submitted) == 12
    assert sum(e.rows for e in events if isinstance(e, RowsLoaded)) == 12
    assert sum(e.charged for e in events if isinstance(e, CreditsCharged)) == 12 * PER_ROW
    again, again_code = placeflow_research(
        WarehouseSource(db, older_than=timedelta(0)), db, sb.target(), None
    )
    assert again_code == 0 and again.skipped_fresh == 12 and again.charged == 0
    assert sb.credits()["charged"] - before == 12 * PER_ROW


def placeflow_research(
    source: WarehouseSource,
    db: Path,
    target: Target,
    on_event: Callable[[Event], None] | None,
) -> tuple[RunSummary, int]:
    """The research of the warehouse's places, in this process: its summary and exit code."""
    return ended(
        lambda: research(
            source, ResearchOptions(spec=spec()), target=target, db=db,
            sleep=lambda s: None, on_event=on_event,
        )
    )  # fmt: skip


def test_cli_from_warehouse_with_a_limit_prints_exactly_one_json_document(
    tmp_path: Path,
    serve: ServeSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """research --from-warehouse --limit 5 --json: 5 places researched (the sandbox billed 5),
    stdout is one JSON document and nothing else; --country FR selects none of these US places."""
    sb = serve(fail_rate=0.0)
    db, keys = loaded_warehouse(tmp_path, sb, 8)
    monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
    monkeypatch.setenv("PLACEFLOW_BASE_URL", sb.base_url)
    monkeypatch.setenv("PLACEFLOW_RATE_LIMITS", f"10/{SCALE:g}s,100/{60 * SCALE:g}s")
    capsys.readouterr()
    argv = ["research", "--from-warehouse", "--older-than", "0", "--limit", "5",
            "--field", "vegan:bool", "--db", str(db), "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["submitted"] == 5 and out["charged"] == 5 and out["status"] == "completed"
    assert sb.research()["billed_places"] == 5
    assert set(researched(db)) < keys and len(researched(db)) == 5
    other = [*argv[:-3], "--country", "FR", "--db", str(db), "--json"]  # the places are in the US
    assert main(other) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows_read"] == 0 and out["submitted"] == 0 and out["charged"] == 0
    assert sb.research()["billed_places"] == 5


def test_cli_from_warehouse_refuses_inputs_beside_it_and_a_missing_warehouse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--from-warehouse with INPUT files, or with no warehouse at --db, exits 2 and says why
    (under --json in one JSON document)."""
    csv = write_csv(tmp_path / "p.csv", places(2))
    db = str(tmp_path / "none.duckdb")
    both = ["research", str(csv), "--from-warehouse", "--field", "vegan:bool", "--db", db]
    assert main(both) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["research", "--from-warehouse", "--field", "vegan:bool", "--db", db]) == 2
    assert "no warehouse" in capsys.readouterr().err
    assert main(["research", "--field", "vegan:bool", "--db", db]) == 2
    assert "--from-warehouse" in capsys.readouterr().err
    assert main([*both, "--json"]) == 2  # under --json an error exit is one document too
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "error" and doc["exit_code"] == 2 and "not both" in doc["message"]
    assert not Path(db).exists()
