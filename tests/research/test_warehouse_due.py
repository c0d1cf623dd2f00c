"""The Prefect-free parts of research from the warehouse: the selection's checks, the field
parameter's two forms, and the summary's markdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from placeflow.errors import InputError
from placeflow.pipeline.account import ResearchInfo, RunSummary
from placeflow.pipeline.research.fields import FieldSpecError
from placeflow.reporting.summary import markdown_summary, text_summary
from placeflow.runner.research_due import due_source, research_spec

from .conftest import spec


def test_due_source_refuses_a_negative_limit_and_a_missing_warehouse(tmp_path: Path) -> None:
    """A negative limit and a warehouse that is not there are refused (exit code 2 errors)."""
    db = tmp_path / "none.duckdb"
    with pytest.raises(FieldSpecError, match="--limit"):
        due_source(db, spec=spec(), max_age="30d", limit=-1)
    with pytest.raises(InputError, match="no warehouse"):
        due_source(db, spec=spec(), max_age="30d")
    db.touch()
    source = due_source(db, spec=spec(), max_age="30d", limit=5)
    assert source.max_age.days == 30 and source.limit == 5
    assert "research_older_than=2.592e+06s|due_limit=5" in source.identity()[1]


def test_fields_are_specs_or_the_path_of_a_fields_file(tmp_path: Path) -> None:
    """A list takes --field specs; a string is a --fields YAML file, as the CLI reads it."""
    listed = research_spec(["owner_person", "vegan:bool"], verify_identity=True)
    assert [f.name for f in listed.fields] == ["owner_person", "vegan"]
    assert listed.verify_identity and not listed.validate_existence
    path = tmp_path / "fields.yaml"
    path.write_text("- name: owner_org\n- name: cuisine\n  value_type: enum\n"
                    "  allowed_values: [thai, other]\n")  # fmt: skip
    assert [f.name for f in research_spec(str(path)).fields] == ["owner_org", "cuisine"]
    with pytest.raises(FieldSpecError):
        research_spec([])


def test_a_research_summary_reads_as_a_run_s_with_its_requests() -> None:
    """A research's summary is the run's (markdown and text): headed as a research, its
    message, the places not due and its requests beside the run's figures; it goes through
    `as_dict` and back (the CLI's JSON, the flow's result) unchanged."""
    figures = dict.fromkeys(RunSummary.__dataclass_fields__, 0)
    figures.update(run_id="rr_1", status="refused", target="sandbox", message="over --max-credits",
                   rows_read=1200, chunks=3, usage_before=None, usage_after=None,
                   usage_delta=None, ledger_vs_usage=None, difference=None,
                   changed_per_credit=None)  # fmt: skip
    figures = {k: v for k, v in figures.items() if k not in ("stages", "research")}
    for name in ("claims_left", "rejected_by_field", "inputs", "changes", "timings"):
        figures[name] = {}
    figures.update(cpu_timings={}, budget_warnings=[])
    info = ResearchInfo(requests_open=3, requests_answered=0, not_due=7)
    summary = RunSummary(**figures, research=info)
    out = summary.as_dict()
    assert (out["requests_open"], out["requests_answered"], out["not_due"]) == (3, 0, 7)
    assert RunSummary.from_dict({**out, "exit_code": 3}) == summary
    text = markdown_summary(summary)
    assert text.startswith("# placeflow research `rr_1`: refused")
    assert "over --max-credits" in text and "| rows read | 1,200 |" in text
    assert "| not due (research younger than --max-age) | 7 |" in text
    assert "| research requests | 3 (0 answered, 3 open) |" in text
    assert text_summary(summary).startswith("research rr_1: refused against the sandbox")
