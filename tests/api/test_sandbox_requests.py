"""The client against the sandbox in-process, on a manual clock, judged by the sandbox's counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from placeflow.api.errors import (
    BadRequest,
    Forbidden,
    IdempotencyConflict,
    InsufficientCredits,
    NotFound,
    OutcomeUnknown,
    RequestRejected,
    Unprocessable,
)
from placeflow.emulator import KeySpec
from placeflow.fields import RateLimits

from .conftest import KEY, MakeRig, poi


def rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [poi(i) for i in range(start, start + n)]


@pytest.mark.parametrize(
    ("tier", "n", "per_s", "per_min"), [("paid", 150, 5, 95), ("free", 25, 3, 10)]
)
def test_normal_run_has_no_429_and_peaks_at_the_limits(
    make_rig: MakeRig, tier: str, n: int, per_s: int, per_min: int
) -> None:
    """A run of back-to-back requests reaches, and never exceeds, the tier's limits less the
    slots the client keeps for urgent replays (URGENT_RESERVE: half a window of seconds, a
    twentieth of a window of minutes)."""
    rig = make_rig(tier=tier)
    for i in range(n):
        rig.client.validate(poi(i))
    key = rig.key_stats()
    assert key["rate_limited"] == 0
    assert (key["peak_per_second"], key["peak_per_minute"]) == (per_s, per_min)
    assert rig.count("POST /v1/validate", 200) == n


def test_429_storm_is_waited_out_and_charged_once(make_rig: MakeRig) -> None:
    """Four injected 429s are each waited out; one 200 follows and one credit at most is spent."""
    rig = make_rig()
    rig.sandbox.inject("POST /v1/validate", "429", times=4)
    start = rig.clock.now()
    assert rig.client.validate(poi()).request_id
    assert rig.count("POST /v1/validate", 429) == 4 and rig.count("POST /v1/validate", 200) == 1
    assert rig.clock.now() - start >= 4.0  # Retry-After: 1, four times
    assert rig.key_stats()["credits"]["charged"] <= 1


def test_real_429s_from_a_misconfigured_limit_are_survived(make_rig: MakeRig) -> None:
    """Told the limit is higher than the key's, the client meets real 429s and still finishes."""
    rig = make_rig(tier="free", limits=RateLimits(windows=((50, 1.0),)))
    for i in range(15):
        rig.client.validate(poi(i))
    assert rig.key_stats()["rate_limited"] > 0
    assert rig.count("POST /v1/validate", 200) == 15


@pytest.mark.parametrize("fault", ["500", "503", "maintenance"])
def test_server_errors_are_retried_to_success(make_rig: MakeRig, fault: str) -> None:
    """500, 503 and maintenance are transient: retried until the job submission succeeds."""
    rig = make_rig()
    rig.sandbox.inject("POST /v1/jobs/validate", fault, times=2)
    submission = rig.client.submit_validate_job(rows(5))
    assert rig.count("POST /v1/jobs/validate") == 3
    assert rig.stats()["jobs"]["created"] == 1
    assert rig.key_stats()["credits"]["held_total"] == 5
    assert submission.batch_id.startswith("job_")


def test_dropped_submission_response_replays_the_same_job(make_rig: MakeRig) -> None:
    """A submission whose response was lost is retried under the same key and replayed."""
    rig = make_rig()
    rig.sandbox.inject("POST /v1/jobs/enrich", "drop_response")
    submission = rig.client.submit_enrich_job(rows(30), idempotency_key="run1-chunk0")
    stats = rig.stats()
    assert submission.replayed
    assert stats["jobs"]["created"] == 1 and stats["idempotent_replays"] == 1
    assert stats["duplicate_submissions"] == 0
    assert rig.key_stats()["credits"]["held_total"] == 30


def test_resumed_process_replays_instead_of_paying_again(make_rig: MakeRig) -> None:
    """A second client submitting the same chunk under the same key gets the original job."""
    rig = make_rig()
    first = rig.client.submit_enrich_job(rows(10), idempotency_key="run1-chunk3")
    again = rig.client.submit_enrich_job(rows(10), idempotency_key="run1-chunk3")
    assert again.batch_id == first.batch_id and again.replayed and not first.replayed
    assert rig.stats()["jobs"]["created"] == 1
    assert rig.key_stats()["credits"]["held_total"] == 10


def test_changed_body_under_the_same_key_is_a_conflict(make_rig: MakeRig) -> None:
    """The same Idempotency-Key with a different chunk raises IdempotencyConflict, unretried."""
    rig = make_rig()
    rig.client.submit_enrich_job(rows(10), idempotency_key="run1-chunk4")
    with pytest.raises(IdempotencyConflict) as info:
        rig.client.submit_enrich_job(rows(10, start=1), idempotency_key="run1-chunk4")
    assert info.value.idempotency_key == "run1-chunk4"
    assert rig.count("POST /v1/jobs/enrich", 409) == 1
    assert rig.stats()["jobs"]["created"] == 1


def test_credits_running_out_mid_run_raise_402_once(make_rig: MakeRig) -> None:
    """When the balance drops below a chunk's size, the next submission gets 402, not retried."""
    rig = make_rig()
    rig.client.submit_validate_job(rows(20), idempotency_key="c0")
    rig.sandbox.backend.set_available(KEY, 5)
    with pytest.raises(InsufficientCredits) as info:
        rig.client.submit_validate_job(rows(20, start=20), idempotency_key="c1")
    assert (info.value.needed, info.value.available) == (20, 5)
    assert rig.count("POST /v1/jobs/validate", 402) == 1
    assert rig.stats()["jobs"]["created"] == 1


def test_dropped_validate_is_not_paid_twice_by_default(make_rig: MakeRig) -> None:
    """A validate whose response was lost raises OutcomeUnknown; the sandbox charged it once."""
    rig = make_rig()
    rig.sandbox.inject("POST /v1/validate", "drop_response")
    with pytest.raises(OutcomeUnknown) as info:
        rig.client.validate(poi(1))
    assert info.value.possible_credits == 1
    assert rig.count("POST /v1/validate") == 1
    assert rig.key_stats()["credits"]["charged"] == 1


def test_allowed_retry_after_a_drop_is_reported_as_a_possible_double_charge(
    make_rig: MakeRig,
) -> None:
    """With allow_double_charge the retry succeeds; the sandbox bills twice, the client says so."""
    rig = make_rig()
    rig.sandbox.inject("POST /v1/enrich-batch", "drop_response")
    result = rig.client.enrich_batch(rows(4), allow_double_charge=True)
    charged = rig.key_stats()["credits"]["charged"]
    first_attempt = charged - sum(r.success for r in result.results)
    assert rig.count("POST /v1/enrich-batch") == 2
    assert first_attempt == 4  # the sandbox billed the attempt whose answer was lost
    assert rig.client.possible_extra_credits == 4


def test_bad_rows_never_reach_the_sandbox(make_rig: MakeRig) -> None:
    """A chunk with an invalid row is refused by the client; the sandbox sees no request."""
    rig = make_rig()
    chunk = rows(5)
    chunk[2]["country"] = "France"
    with pytest.raises(RequestRejected) as info:
        rig.client.submit_validate_job(chunk)
    assert [d.field for d in info.value.details] == ["pois[2].country"]
    assert rig.count("POST /v1/jobs/validate") == 0


def test_a_checked_body_goes_out_unparsed_and_a_bad_row_is_refused_by_the_service(
    make_rig: MakeRig,
) -> None:
    """checked=True sends the bytes unparsed: a row that slipped through is named by the
    sandbox's 400, and no job is created and nothing held or charged."""
    rig = make_rig()
    chunk = rows(5)
    chunk[2]["country"] = "France"
    body = json.dumps({"pois": chunk}).encode()
    with pytest.raises(BadRequest) as info:
        rig.client.submit_job_body("validate", body, idempotency_key="k-checked", checked=True)
    assert [d.field for d in info.value.details] == ["pois[2].country"]
    assert rig.count("POST /v1/jobs/validate", 400) == 1
    assert rig.stats()["jobs"]["created"] == 0
    credits = rig.key_stats()["credits"]
    assert (credits["held"], credits["charged"]) == (0, 0)


def test_unknown_and_malformed_batch_ids(make_rig: MakeRig) -> None:
    """An unknown batch_id is NotFound, a malformed one Unprocessable, each asked once."""
    rig = make_rig()
    with pytest.raises(NotFound):
        rig.client.job_status("job_" + "0" * 24)
    with pytest.raises(Unprocessable) as info:
        rig.client.job_status("nope")
    assert info.value.details[0].field == "path.batch_id"
    assert rig.count("GET /v1/jobs/{batch_id}") == 2


def test_revoked_key_is_forbidden_at_once(make_rig: MakeRig) -> None:
    """A revoked key gets 403 once, with a message naming the key by its hint only."""
    rig = make_rig()
    rig.sandbox.backend.add_key(KeySpec(key=KEY, status="revoked"))
    with pytest.raises(Forbidden) as info:
        rig.client.usage()
    assert KEY not in str(info.value) and KEY[-4:] in str(info.value)
    assert rig.count("GET /v1/usage") == 1


def test_account_endpoints_and_pricing(make_rig: MakeRig) -> None:
    """usage() reports spendable credits and the key hint; pricing() lists the validate rate."""
    rig = make_rig(credits=500)
    rig.client.validate(poi())
    usage = rig.client.usage()
    assert usage.spendable == rig.key_stats()["credits"]["available"]
    assert usage.key_hint == KEY[-4:]
    rate = rig.client.pricing().rate("validate")
    assert rate is not None and rate.credits == 1


def test_deep_research_retries_operational_status_unavailable(make_rig: MakeRig) -> None:
    """A deep-research 503 operational_status_unavailable is retried and billed once."""
    rig = make_rig()
    rig.sandbox.inject("POST /v1/deep-research", "503")
    request = {"pois": rows(2), "attributes": [{"name": "owner_org"}, {"name": "founded"}]}
    response = rig.client.deep_research(request)
    assert len(response.rows) == 2
    assert rig.count("POST /v1/deep-research", 503) == 1
    assert response.meta is not None and response.meta.estimated_credits == 4
    assert rig.key_stats()["credits"]["charged"] == 4
