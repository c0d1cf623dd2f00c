"""A research's lost answer is never booked from another run's spend on the same key: the key's
spend journal says who else had spend in flight, and the research then holds the request as
uncertain instead of taking the usage delta for its own. Checked on what the sandbox billed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from placeflow.pipeline.account import RunSummary
from placeflow.runner.research import ResearchOptions, read_options, research

from .conftest import ServeSandbox, places, spec, write_csv


def test_another_runs_spend_during_a_lost_answer_is_not_booked_to_the_research(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """The research's request never reaches the service (dropped) while another run on the
    key spends 5 credits: the usage moved by 5, within what the request could cost. With the
    journal naming the other run, the research books no charge (the sandbox billed research
    nothing), holds the request uncertain with its possible credits, and the next invocation,
    reading usage afresh, buys it once."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(10)), tmp_path / "wh.duckdb"
    target = sb.target()  # the research's clients and the other run's share its key's journal

    def other_run_spends(moment: str, sent: int) -> None:
        if moment != "sent":
            return
        sb.sandbox.inject("POST /v1/deep-research", "drop_request")
        with target.client() as other:
            assert other.journal is not None
            other.journal.active("run_other")
            for place in places(5, start=100):
                other.validate({"id": place["id"], "poi_name": place["name"]})
            other.journal.settled("run_other")

    def go(options: ResearchOptions, **kw: object) -> RunSummary:
        return research(
            [str(csv)], options, target=target, db=db, sleep=lambda s: None,
            clock=lambda: datetime.now(UTC), **kw,  # type: ignore[arg-type]  # the hook
        )  # fmt: skip

    first = go(ResearchOptions(spec=spec()), hook=other_run_spends)
    stats = sb.research()
    assert stats["credits"] == 0  # the service billed the research nothing
    assert first.status == "interrupted" and first.charged == 0, first  # exit 1: not raised
    assert first.possible_extra_credits == 40
    with duckdb.connect(str(db), read_only=True) as con:
        (state,) = con.execute("select state from research_requests").fetchall()
    assert state == ("uncertain",)
    second = go(ResearchOptions(spec=spec(), run=read_options(resend_uncertain=True)))
    assert second.status == "completed" and second.charged == 40 == sb.research()["credits"]
    assert sb.research()["billed_twice"] == []
