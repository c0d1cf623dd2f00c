"""`placeflow research` over a sandbox served on loopback: credits to the credit, every answer
shape, budgets, refusals and lost answers, checked on what the sandbox itself recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.runner.research import ResearchOptions, estimate, read_options

from .conftest import KEY, ServeSandbox, places, spec, write_csv

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

PER_ROW = 4  # 3 fields + identity


def answers(db: Path, where: str = "true") -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            f"select place_key, field, status, row_status from research_answers where {where}"
        ).fetchall()


def test_charge_equals_ledger_and_usage_and_a_rerun_charges_nothing(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """40 places x 3 fields with identity: estimate = charge = ledger = usage delta = sandbox's
    ledger; duplicates fan out; every place has its 3 answers; a rerun buys nothing."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(40) + places(3)), tmp_path / "wh.duckdb"
    out, code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert code == 0 and out.status == "completed", out
    assert out.submitted == 40 and out.duplicates == 3
    assert out.credits_estimated == out.charged == out.usage_delta == 40 * PER_ROW
    assert sb.credits()["charged"] == 40 * PER_ROW
    assert sb.research()["requests"] == {"estimate_only": 1, "answered": 4}
    got = answers(db)
    assert len(got) == 120 and len({(k, f) for k, f, _, _ in got}) == 120
    assert {s for _, _, s, _ in got} <= {"confirmed", "estimated", "unconfirmed"}
    again, again_code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert again_code == 0 and again.skipped_fresh == 40 and again.charged == 0
    assert sb.credits()["charged"] == 40 * PER_ROW
    assert sb.requests("POST /v1/deep-research") == 5


def test_max_credits_below_the_estimate_refuses_before_any_research_request(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """--max-credits under the estimate: exit 3, the sandbox saw no research request."""
    sb = serve()
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    out, code = sb.run(
        csv, db, ResearchOptions(spec=spec(), run=read_options(max_credits=20 * PER_ROW - 1))
    )
    assert code == 3 and out.status == "refused", out
    assert "max-credits" in out.message
    assert sb.requests("POST /v1/deep-research") == 0 and sb.credits()["charged"] == 0


def test_credits_running_out_part_way_stop_with_3_and_the_same_command_resumes(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """The key's credits run out after 2 requests: exit 3, nothing lost; credits added, the same
    command finishes the run; no place or field billed twice on the sandbox's ledger."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(50)), tmp_path / "wh.duckdb"

    first, first_code = sb.run(csv, db, ResearchOptions(spec=spec()), hook=sb.starved_after(2))
    assert first_code == 3 and first.status == "interrupted", first
    assert first.charged == 20 * PER_ROW == sb.credits()["charged"]
    sb.sandbox.backend.set_available(KEY, 10_000)
    second, second_code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert second_code == 0 and second.run_id == first.run_id, second
    assert second.charged == 50 * PER_ROW == sb.credits()["charged"]
    assert sb.research()["billed_twice"] == [] and sb.research()["billed_places"] == 50
    assert len(answers(db)) == 150


def test_budget_running_out_part_way_stops_before_the_request_that_would_pass_it(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Resumed with less budget left than the rest can cost: refused (exit 3) before any
    request; with enough it finishes, every request carrying max_credits = the budget left."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(30)), tmp_path / "wh.duckdb"
    opts = ResearchOptions(spec=spec(), run=read_options(max_credits=30 * PER_ROW))

    assert sb.run(csv, db, opts, hook=sb.starved_after(1, left=0))[1] == 3
    sb.sandbox.backend.set_available(KEY, 10_000)
    tight, tight_code = sb.run(
        csv, db, ResearchOptions(spec=spec(), run=read_options(max_credits=15 * PER_ROW))
    )
    assert tight_code == 3 and "budget left" in tight.message, tight
    assert tight.charged == 10 * PER_ROW == sb.credits()["charged"]
    assert sb.requests("POST /v1/deep-research") == 3
    done, done_code = sb.run(csv, db, opts)
    assert done_code == 0 and done.charged == 30 * PER_ROW, done
    with duckdb.connect(str(db), read_only=True) as con:
        sent = con.execute("select max_credits_sent from research_requests order by 1").fetchall()
    assert [r[0] for r in sent] == [40, 80, 120]


def test_a_field_rejected_by_policy_stops_before_spending_and_names_it(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """422 FIELD_REJECTED on the estimate request: refused (exit 3), the field and the reason
    named, nothing charged."""
    sb = serve()
    csv, db = write_csv(tmp_path / "p.csv", places(12)), tmp_path / "wh.duckdb"
    out, code = sb.run(csv, db, ResearchOptions(spec=spec(fields=("cuisine", "owner_ssn"))))
    assert code == 3 and out.status == "refused", out
    assert "owner_ssn" in out.message and "personal data" in out.message
    assert sb.credits()["charged"] == 0 and sb.research()["requests"] == {"field_rejected": 1}


def test_agent_unavailable_is_retried_with_backoff_and_never_billed(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Two agent_unavailable answers (nothing billed) are retried after 2 s then 4 s; the
    run completes and the charge is the ordinary one."""
    sb = serve(fail_rate=0.0)
    sb.knobs.unavailable_next = 2
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    waits: list[float] = []
    out, code = sb.run(csv, db, ResearchOptions(spec=spec()), sleep=waits.append)
    assert code == 0 and out.charged == 20 * PER_ROW == sb.credits()["charged"]
    assert waits == [2.0, 4.0]
    assert sb.research()["requests"]["agent_unavailable"] == 2


def test_503_operational_status_unavailable_is_retried(tmp_path: Path, serve: ServeSandbox) -> None:
    """A 503 operational_status_unavailable is retried by the client; billed once."""
    from placeflow.emulator import FaultConfig

    sb = serve(fail_rate=0.0, faults=FaultConfig(retry_after_seconds=0))
    sb.sandbox.inject("POST /v1/deep-research", "503")
    csv, db = write_csv(tmp_path / "p.csv", places(10)), tmp_path / "wh.duckdb"
    out, code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert code == 0 and out.charged == 10 * PER_ROW == sb.credits()["charged"]
    assert sb.sandbox.stats()["requests"]["POST /v1/deep-research"]["503"] == 1


def test_a_lost_answer_is_judged_by_usage_not_resent(tmp_path: Path, serve: ServeSandbox) -> None:
    """The answer to a billed request is lost: the usage delta shows it was billed, so it is
    ledgered and not resent (exit 1); --resend-uncertain buys it again knowingly. A request
    that never arrived is resent at no cost."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"

    def lose_second(moment: str, sent: int) -> None:
        if moment == "sent" and sent == 1:
            sb.sandbox.inject("POST /v1/deep-research", "drop_request")
        if moment == "sent" and sent == 3:
            sb.sandbox.inject("POST /v1/deep-research", "drop_response")

    first, first_code = sb.run(csv, db, ResearchOptions(spec=spec()), hook=lose_second)
    assert first_code == 1 and "resend-uncertain" in first.message, first
    assert first.charged == first.usage_delta == 20 * PER_ROW == sb.credits()["charged"]
    assert sb.research()["billed_twice"] == []
    with duckdb.connect(str(db), read_only=True) as con:
        states = con.execute("select state from research_requests order by request_no").fetchall()
    assert [s[0] for s in states] == ["answered", "lost"]
    assert len(answers(db)) == 30
    second, second_code = sb.run(
        csv, db, ResearchOptions(spec=spec(), run=read_options(resend_uncertain=True))
    )
    assert second_code == 0 and second.charged == 30 * PER_ROW, second
    assert second.charged == sb.credits()["charged"] and len(answers(db)) == 60


def test_on_a_shared_key_a_lost_answer_is_held_uncertain(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """With --shared-key the usage cannot tell: the possible credits are recorded, the request
    held uncertain, nothing resent."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(10)), tmp_path / "wh.duckdb"
    opts = ResearchOptions(spec=spec(), exclusive_key=False)

    def lose(moment: str, sent: int) -> None:
        if moment == "sent":
            sb.sandbox.inject("POST /v1/deep-research", "drop_response")

    out, code = sb.run(csv, db, opts, hook=lose)
    assert code == 1 and out.possible_extra_credits == 10 * PER_ROW, out
    assert out.charged == 0 and sb.credits()["charged"] == 10 * PER_ROW
    assert sb.requests("POST /v1/deep-research") == 2


def test_cost_capped_rejected_and_errored_rows_are_recorded_and_billed_right(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Cost-capped and rejected fields, errored rows: each answer kept with its status, only
    researched fields billed; ledger = usage delta; capped and errored places retried next run."""
    sb = serve(fail_rate=0.2)
    sb.knobs.cost_cap_credits = 25
    sb.knobs.rejected_fields = {"owner_person": "not researched for this key"}
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    out, code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert code == 0 and out.charged == out.usage_delta, out
    assert out.charged == sb.credits()["charged"] < out.credits_estimated
    got = answers(db)
    statuses = {s for _, _, s, _ in got}
    assert {"rejected", "cost_capped", "error"} <= statuses
    assert {r for _, _, _, r in got} >= {"cost_capped", "error"}
    assert len(got) == 60


def test_estimate_spends_nothing(tmp_path: Path, serve: ServeSandbox) -> None:
    """--estimate: the local estimate, checked by one estimate_only request; nothing charged."""
    sb = serve()
    csv = write_csv(tmp_path / "p.csv", places(25))
    opts = ResearchOptions(spec=spec(), estimate_only=True)
    out = estimate([str(csv)], opts, target=sb.target(), db=tmp_path / "wh.duckdb")
    assert out["exit_code"] == 0 and out["credits_estimated"] == 25 * PER_ROW, out
    assert out["requests"] == 3 and sb.credits()["charged"] == 0
    assert sb.research()["requests"] == {"estimate_only": 1}
    assert not (tmp_path / "wh.duckdb").exists()


def test_sample_researches_the_first_places_only(tmp_path: Path, serve: ServeSandbox) -> None:
    """--sample 5: only the first 5 places are researched and billed."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(30)), tmp_path / "wh.duckdb"
    out, code = sb.run(csv, db, ResearchOptions(spec=spec(), sample=5))
    assert code == 0 and out.submitted == 5 and out.rows_read == 5, out
    assert sb.credits()["charged"] == 5 * PER_ROW


def test_answers_carrying_a_field_nobody_asked_for_are_loaded_and_booked(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """The sandbox adds an `x_ext` entry to every row's fields (unknown_fields): every answer
    is loaded (3 fields a place), the ledger = the sandbox's charge, nothing billed twice, and a
    rerun buys nothing."""
    from placeflow.emulator import FaultConfig

    sb = serve(fail_rate=0.0, faults=FaultConfig(unknown_fields=True))
    csv, db = write_csv(tmp_path / "p.csv", places(20)), tmp_path / "wh.duckdb"
    out, code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert code == 0 and out.status == "completed", out
    assert out.charged == out.usage_delta == sb.credits()["charged"] == 20 * PER_ROW
    assert len(answers(db)) == 60 and not answers(db, "field = 'x_ext'")
    assert sb.research()["billed_twice"] == []
    again, again_code = sb.run(csv, db, ResearchOptions(spec=spec()))
    assert again_code == 0 and again.charged == 0
    assert sb.credits()["charged"] == 20 * PER_ROW
