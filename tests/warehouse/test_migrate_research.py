"""Migration 017 (issue 36): a warehouse written before it, with research runs and their ledger
beside runs of files and theirs, keeps every run and every credit once research is a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.errors import UnknownRun
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.state.checks import run_checks
from placeflow.state.runread import stored_run
from placeflow.store import warehouse
from placeflow.store.warehouse import connect, sql_text

FIELDS = ("cuisine:enum:italian|thai", "owner_person")
SPEC = ResearchSpec(build_specs(FIELDS), verify_identity=True)


def _pre_017(path: Path) -> None:
    """A warehouse of the migrations before 017, as placeflow wrote them: two runs of files
    (one adjusted to the service's usage) and three research runs (completed with a possible
    charge, interrupted after a lost answer billed per the usage delta, refused)."""
    con = duckdb.connect(str(path))
    con.execute(sql_text("meta/schema_migrations"))
    for version, name in warehouse.migrations():
        if version < "017":
            con.execute(sql_text(f"schema/{version}_{name}"))
            con.execute("insert into schema_migrations values (?, ?, now())", [version, name])
    con.execute(
        "insert into runs (run_id, created_at, finished_at, status, mode, signature, inputs,"
        " options, target, key_hint, fingerprint, rows_read, submitted, succeeded, failed,"
        " credits_estimated, usage_before, usage_after) values"
        " ('run_a', '2026-01-01 10:00:00+00', '2026-01-01 10:05:00+00', 'completed',"
        "  'validate', 'validate||', '[\"a.csv\"]', '{\"mode\":\"validate\",\"max_credits\":50}',"
        "  'sandbox', '…c5c5', 'fa', 3, 3, 3, 0, 3, 100, 104),"
        " ('run_b', '2026-01-03 10:00:00+00', null, 'interrupted', 'enrich',"
        "  'enrich|phone|', '[\"b.csv\"]', '{\"mode\":\"enrich\"}', 'sandbox', '…c5c5', 'fb',"
        "  2, 2, 0, 0, 4, 130, null)"
    )
    con.execute(
        "insert into credit_ledger values"
        " ('run_a', 0, 'job_1', 'hold', 3, '2026-01-01 10:01:00+00', 'held'),"
        " ('run_a', 0, 'job_1', 'charge', 3, '2026-01-01 10:02:00+00', 'charged'),"
        " ('run_a', 0, 'job_1', 'release', 0, '2026-01-01 10:02:00+00', 'released'),"
        " ('run_a', null, 'usage', 'adjustment', 1, '2026-01-01 10:05:00+00', 'usage said 4'),"
        " ('run_b', 0, 'job_2', 'hold', 4, '2026-01-03 10:01:00+00', 'held')"
    )
    research = (
        "insert into research_runs (run_id, created_at, finished_at, status, fields,"
        " verify_identity, validate_existence, sample, max_credits, fingerprint, inputs, target,"
        " key_hint, rows_read, rejected, duplicates, skipped_fresh, submitted, credits_estimated,"
        " credits_per_field, credits_per_identity, usage_before, usage_after, message)"
        " values (?, ?, ?, ?, ?, true, false, ?, ?, ?, '[\"p.csv\"]', 'sandbox', 'c5c5',"
        " ?, 0, 0, 0, ?, ?, 1, 1, ?, ?, ?)"
    )
    fields = SPEC.fields_json()
    con.executemany(
        research,
        [
            ["rr_1", "2026-01-02 10:00:00+00", "2026-01-02 10:09:00+00", "completed", fields,
             None, 100, "f1", 12, 12, 36, 104, 137, None],
            ["rr_2", "2026-01-02 11:00:00+00", None, "interrupted", fields, 5, None, "f2",
             5, 5, 15, 137, None, "1 request(s) lost or uncertain"],
            ["rr_3", "2026-01-02 12:00:00+00", "2026-01-02 12:00:01+00", "refused", fields,
             None, 3, "f3", 20, 20, 60, None, None, "over --max-credits"],
        ],
    )  # fmt: skip
    con.execute(
        "insert into research_ledger values"
        " ('rr_1', 0, 'rq_a', 'charge', 30, '2026-01-02 10:03:00+00', '10 row(s) researched'),"
        " ('rr_1', 1, 'rr-rq-1', 'possible', 6, '2026-01-02 10:04:00+00', 'no answer'),"
        " ('rr_1', 1, 'rq_b', 'charge', 3, '2026-01-02 10:08:00+00', '1 row(s) researched'),"
        " ('rr_2', 0, 'rq-rr_2-0', 'charge', 15, '2026-01-02 11:02:00+00', 'answer lost')"
    )
    answers = [
        ("rr_1", f"pk_{i}", i // 10, i % 10, field, "error" if i == 11 else "enriched")
        for i in range(12)
        for field in ("cuisine", "owner_person")
    ]
    con.executemany(
        "insert into research_answers (run_id, place_key, request_no, position, field,"
        " field_sha, status, row_status, credits, researched_at, loaded_at)"
        " values (?, ?, ?, ?, ?, 'sha', 'confirmed', ?, 0, now(), now())",
        answers,
    )
    con.close()


def _rows(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple[Any, ...]]:
    return con.execute(query).fetchall()


def test_migration_017_keeps_every_run_and_every_credit(tmp_path: Path) -> None:
    """Every run (of files and of research) is one row of runs, the research ones as they were
    (research_runs, now a view, gives back the very rows); every ledger entry of both ledgers is
    in credit_ledger, to the credit, per run and kind; run_credits counts research charges and
    possible charges, and the ledger explains the service's usage; `placeflow resume` leaves a
    research run to its own command; the warehouse reopens."""
    path = tmp_path / "old.duckdb"
    _pre_017(path)
    with duckdb.connect(str(path), read_only=True) as old:
        old_research = _rows(old, "select * from research_runs order by run_id")
        columns = [d[0] for d in old.execute("select * from research_runs limit 0").description]
        old_runs = _rows(old, "select * from runs order by run_id")
        ledger = "select run_id, chunk_no, ref, kind, credits, recorded_at, note from {}"
        old_entries = _rows(old, ledger.format("credit_ledger")) + _rows(
            old, ledger.replace("chunk_no", "request_no").format("research_ledger")
        )
        old_research_ledger = _rows(old, "select * from research_ledger order by all")
    con = connect(path)
    try:
        migrated = con.execute(
            "select version from schema_migrations where version >= '017' order by version"
        )
        assert migrated.fetchall()[0] == ("017",)
        kinds = dict(_rows(con, "select table_name, table_type from information_schema.tables"))
        assert kinds["research_runs"] == kinds["research_ledger"] == "VIEW"
        assert _rows(con, "select run_id, mode, status from runs order by run_id") == [
            ("rr_1", "research", "completed"),
            ("rr_2", "research", "interrupted"),
            ("rr_3", "research", "refused"),
            ("run_a", "validate", "completed"),
            ("run_b", "enrich", "interrupted"),
        ]
        width = len(old_runs[0])
        kept = _rows(con, "select * from runs where mode <> 'research' order by run_id")
        assert [r[:width] for r in kept] == old_runs  # runs of files: every column as it was
        names = ", ".join(columns)
        moved = f"select {names} from research_runs order by run_id"
        hint = columns.index("key_hint")  # now as runs keep it: the client's …c5c5
        assert [(*r[:hint], "c5c5", *r[hint + 1 :]) for r in _rows(con, moved)] == old_research
        assert {r[hint] for r in _rows(con, moved)} == {"…c5c5"}
        assert _rows(con, "select * from research_ledger order by all") == old_research_ledger
        new_entries = _rows(con, ledger.format("credit_ledger"))
        assert sorted(new_entries, key=repr) == sorted(old_entries, key=repr)
        totals = _rows(
            con,
            "select run_id, kind, sum(credits)::bigint from credit_ledger"
            " group by all order by all",
        )
        assert totals == [
            ("rr_1", "charge", 33),
            ("rr_1", "possible", 6),
            ("rr_2", "charge", 15),
            ("run_a", "adjustment", 1),
            ("run_a", "charge", 3),
            ("run_a", "hold", 3),
            ("run_a", "release", 0),
            ("run_b", "hold", 4),
        ]
        credits = _rows(
            con,
            "select run_id, estimated, charged, usage_delta, ledger_vs_usage,"
            " possible_extra_credits from run_credits where run_id like 'rr%' order by run_id",
        )
        assert credits == [
            ("rr_1", 36, 33, 33, 0, 6),
            ("rr_2", 15, 15, None, None, 0),
            ("rr_3", 60, 0, None, None, 0),
        ]
        research = _rows(
            con,
            "select run_id, signature, succeeded, failed, max_credits, sample, fields"
            " from runs where mode = 'research' order by run_id",
        )
        signature = SPEC.signature()  # what a research run of the same spec writes today
        assert research == [
            ("rr_1", signature, 11, 1, 100, None, SPEC.fields_json()),
            ("rr_2", signature, 0, 0, None, 5, SPEC.fields_json()),
            ("rr_3", signature, 0, 0, 3, None, SPEC.fields_json()),
        ]
        checks = run_checks(con)
        assert checks["usage_delta_unexplained"] == checks["ledger_double_charge"] == 0
        with pytest.raises(UnknownRun, match="research run: the same `placeflow research`"):
            stored_run(con, "rr_2")  # `placeflow resume` leaves it to the research command
        assert stored_run(con, "run_b").status == "interrupted"
    finally:
        con.close()
    with duckdb.connect(str(path), read_only=True) as again:  # the migration was checkpointed
        assert _rows(again, "select count(*) from runs") == [(5,)]
        assert _rows(again, "select sum(credits)::bigint from credit_ledger") == [
            (3 + 3 + 0 + 1 + 4 + 30 + 6 + 3 + 15,)
        ]
