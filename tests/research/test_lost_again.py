"""A research request is judged by the run's rule for a request without an Idempotency-Key
(`placeflow.pipeline.writeahead`): its lost answer read against the run's ledger, so a request
resent by --resend-uncertain and lost again is judged as the first loss was. Checked on what
the sandbox itself billed."""

from __future__ import annotations

from pathlib import Path

import duckdb

from placeflow.events import Event, Note
from placeflow.runner.research import ResearchOptions, read_options

from .conftest import ServeSandbox, places, spec, write_csv

PER_ROW = 4  # 3 fields + identity


def test_a_resent_request_lost_again_is_booked_as_the_usage_shows(
    tmp_path: Path, serve: ServeSandbox
) -> None:
    """Lost after billing, resent by --resend-uncertain (said, as a run's held chunk is) and lost
    after billing again: each loss is charged by the usage beyond the run's ledger (the second's
    own ref), nothing is held as possible, and the ledger equals what the sandbox billed; a
    third invocation buys it."""
    sb = serve(fail_rate=0.0)
    csv, db = write_csv(tmp_path / "p.csv", places(10)), tmp_path / "wh.duckdb"
    resend = ResearchOptions(spec=spec(), run=read_options(resend_uncertain=True))

    def lose(moment: str, sent: int) -> None:
        if moment == "sent":
            sb.sandbox.inject("POST /v1/deep-research", "drop_response")

    first, first_code = sb.run(csv, db, ResearchOptions(spec=spec()), hook=lose)
    said: list[Event] = []
    again, again_code = sb.run(csv, db, resend, hook=lose, on_event=said.append)
    resent = [e.message for e in said if isinstance(e, Note) and "sent again" in e.message]
    assert resent == ["request 0: lost; its places are sent again (--resend-uncertain)"], said
    assert first_code == again_code == 1, (first, again)
    assert again.charged == 2 * 10 * PER_ROW == sb.credits()["charged"], again
    assert again.possible_extra_credits == 0
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = con.execute("select kind, count(distinct ref) from credit_ledger group by all")
        assert dict(kinds.fetchall()) == {"charge": 2}
        (state,) = con.execute("select state from research_requests").fetchall()
    assert state == ("lost",)
    last, last_code = sb.run(csv, db, resend)
    assert last_code == 0 and last.charged == 3 * 10 * PER_ROW == sb.credits()["charged"]
    assert last.ledger_vs_usage == 0, last
