"""What the client sends: checked requests, the key only where it belongs, and nothing leaked."""

from __future__ import annotations

import gc
import json
import logging

import httpx
import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import (
    PlaceflowError,
    RequestRejected,
    ServerError,
    UnexpectedResponse,
    UsageUnknown,
)
from placeflow.api.limiter import RateLimiter
from placeflow.api.limits import gc_paused
from placeflow.fields import ALLOWED_ENRICH_ATTRIBUTES, RateLimits

from .conftest import (
    BASE,
    JOB_SUBMITTED,
    KEY,
    VALIDATE_OK,
    FakeTime,
    Script,
    js,
    mock_client,
    poi,
)

PRICING = {"unit": "credits", "rates": [], "packs_url": "https://x/packs"}


def test_api_requests_carry_key_and_user_agent() -> None:
    """Every API request carries X-API-Key and a placeflow User-Agent."""
    script = Script([js(200, VALIDATE_OK)])
    mock_client(script, FakeTime()).validate(poi())
    request = script.requests[0]
    assert request.headers["X-API-Key"] == KEY
    assert request.headers["User-Agent"].startswith("placeflow/")
    assert str(request.url) == f"{BASE}/v1/validate"


def test_pricing_is_sent_without_key_and_cached_five_minutes() -> None:
    """GET /v1/pricing needs no key, so none is sent; a second call within 300 s is cached."""
    script = Script([js(200, PRICING)])
    time = FakeTime()
    client = mock_client(script, time)
    client.pricing()
    client.pricing()
    assert len(script.requests) == 1 and "X-API-Key" not in script.requests[0].headers
    time.now += 301
    client.pricing()
    assert len(script.requests) == 2


def test_file_client_never_sends_the_key_even_to_the_api_origin() -> None:
    """Result files are fetched without any credential, whichever host serves them."""
    script = Script([httpx.Response(200, content=b"data")])
    client = mock_client(script, FakeTime())
    for url in (f"{BASE}/results/x.gz", "https://files.elsewhere.test/x.gz"):
        with client.stream_file(url) as response:
            response.read()
    assert all("X-API-Key" not in r.headers for r in script.requests)


def test_file_client_refuses_a_credential_added_by_mistake() -> None:
    """A credential header on the file client fails loudly instead of leaking."""
    script = Script([httpx.Response(200, content=b"")])
    client = mock_client(script, FakeTime())
    client.files.headers["X-API-Key"] = KEY
    with (
        pytest.raises(PlaceflowError, match="refusing to send x-api-key"),
        client.stream_file("https://files.elsewhere.test/x.gz"),
    ):
        pass
    assert script.requests == []


def test_redirects_are_not_followed_with_the_key() -> None:
    """A redirect from the API is not followed (httpx would carry X-API-Key to the new host)."""
    script = Script([httpx.Response(302, headers={"Location": "https://evil.test/steal"})])
    with pytest.raises(UnexpectedResponse):
        mock_client(script, FakeTime()).usage()
    assert [r.url.host for r in script.requests] == ["api.places.test"]


def test_bad_row_is_named_and_never_sent() -> None:
    """A job with a too-long poi_name in row 17 is refused before sending, naming the field."""
    rows = [poi(i) for i in range(20)]
    rows[17]["poi_name"] = "x" * 201
    rows[3]["latitude"] = 91
    script = Script([js(200, {})])
    with pytest.raises(RequestRejected) as info:
        mock_client(script, FakeTime()).submit_validate_job(rows)
    fields = [d.field for d in info.value.details]
    assert fields == ["pois[3].latitude", "pois[17].poi_name"]
    assert info.value.rows == [3, 17]
    assert script.requests == []


def test_encoded_job_body_is_checked_in_one_pass_and_sent_verbatim() -> None:
    """A pre-encoded job body goes out byte for byte once it holds to the limits."""
    body = b'{"pois":[{"id":"a","poi_name":"Cafe","street":null,"latitude":45.7,"longitude":4.8}]}'
    script = Script([js(200, JOB_SUBMITTED)])
    job = mock_client(script, FakeTime()).submit_job_body("validate", body, idempotency_key="k1")
    assert job.batch_id == "job_1" and script.bodies() == [body]
    assert script.requests[0].headers["Idempotency-Key"] == "k1"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (b'{"pois":[{"poi_name":"A"},{"poi_name":""},{"poi_name":"C","latitude":91}]}',
         ["pois[1].poi_name", "pois[2].latitude"]),
        (b'{"pois":[]}', ["pois"]),
        (b'{"pois":[{"poi_name":"A"}', ["body"]),
    ],
)  # fmt: skip
def test_bad_encoded_job_body_is_named_and_never_sent(body: bytes, fields: list[str]) -> None:
    """A bad row, an empty job or broken JSON in a pre-encoded body is refused unsent."""
    script = Script([js(200, JOB_SUBMITTED)])
    with pytest.raises(RequestRejected) as info:
        mock_client(script, FakeTime()).submit_job_body("validate", body)
    assert [d.field for d in info.value.details] == fields
    assert script.requests == []


@pytest.mark.parametrize("count", [0, 11])
def test_enrich_batch_size_is_checked(count: int) -> None:
    """enrich-batch takes 1 to 10 places; other sizes are refused unsent."""
    script = Script([js(200, {})])
    with pytest.raises(RequestRejected, match="needs 1 to 10 items"):
        mock_client(script, FakeTime()).enrich_batch([poi(i) for i in range(count)])
    assert script.requests == []


def test_unknown_enrich_attribute_is_refused() -> None:
    """An attribute outside the spec's list is refused before sending."""
    with pytest.raises(RequestRejected, match="attributes"):
        mock_client(Script([js(200, {})]), FakeTime()).enrich(poi(attributes=["fax"]))


def test_attribute_vocabulary_is_the_spec_list() -> None:
    """The request model admits exactly the spec's seven value attributes and the two answered
    under status, and refuses anything else unsent."""
    spec = ["opening_hours", "phone", "website", "facebook", "instagram", "tiktok", "email",
            "existence", "open_closed"]  # fmt: skip
    assert list(ALLOWED_ENRICH_ATTRIBUTES) == spec
    script = Script([js(200, {"success": True})])
    client = mock_client(script, FakeTime())
    client.enrich(poi(attributes=spec))
    with pytest.raises(RequestRejected) as info:
        client.enrich(poi(attributes=["phone", "Phone"]))
    assert [d.field for d in info.value.details] == ["attributes[1]"]
    assert len(script.requests) == 1


def test_invalid_idempotency_key_is_refused_unsent() -> None:
    """An Idempotency-Key with spaces or over 255 characters is refused before sending."""
    script = Script([js(200, {})])
    client = mock_client(script, FakeTime())
    for key in ("has space", "k" * 256, ""):
        with pytest.raises(RequestRejected, match="Idempotency-Key"):
            client.submit_enrich_job([poi()], idempotency_key=key)
    assert script.requests == []


def test_body_uses_spec_names_and_drops_nulls() -> None:
    """freeform_address is sent as address, and unset optional fields are left out."""
    script = Script([js(200, VALIDATE_OK)])
    mock_client(script, FakeTime()).validate({"poi_name": "A", "freeform_address": "1 Main St"})
    assert json.loads(script.requests[0].content) == {"poi_name": "A", "address": "1 Main St"}


def test_batch_id_cannot_escape_the_jobs_path() -> None:
    """A batch_id is quoted into the path, so '../usage' stays inside /v1/jobs/."""
    script = Script([js(404, {"error": "nope"})])
    with pytest.raises(PlaceflowError):
        mock_client(script, FakeTime()).job_status("../usage")
    assert script.requests[0].url.raw_path == b"/v1/jobs/..%2Fusage"


def test_repr_and_errors_never_show_the_key() -> None:
    """The client's repr shows the hint; an error after retries does not contain the key."""
    script = Script([js(500, {"error": f"boom {KEY}"})])
    client = mock_client(script, FakeTime())
    assert KEY not in repr(client) and "…9f3a" in repr(client)
    with pytest.raises(UsageUnknown) as info:
        client.usage()
    cause = info.value.cause
    assert isinstance(cause, ServerError)
    assert KEY not in str(info.value) and KEY not in "".join(cause.__notes__)


def test_retry_logs_do_not_contain_the_key(caplog: pytest.LogCaptureFixture) -> None:
    """Retry warnings name the endpoint and the error, never the key."""
    script = Script([js(500, {"error": f"echo {KEY}"}), js(200, VALIDATE_OK)])
    with caplog.at_level(logging.DEBUG):
        mock_client(script, FakeTime()).validate(poi())
    assert "POST /v1/validate" in caplog.text and KEY not in caplog.text


def test_configuration_is_keyword_only_and_checked() -> None:
    """Config is keyword-only; a non-HTTP base URL or limits plus a limiter are refused."""
    with pytest.raises(TypeError):
        PlaceApiClient(BASE, KEY)  # type: ignore[call-arg]  # positional on purpose: refused
    with pytest.raises(ValueError, match="base_url"):
        PlaceApiClient(base_url="ftp://x", api_key=KEY)
    with pytest.raises(ValueError, match="not both"):
        PlaceApiClient(base_url=BASE, api_key=KEY, limits=RateLimits(), limiter=RateLimiter())


def test_two_clients_can_share_one_limiter() -> None:
    """Clients given the same limiter draw from the same windows."""
    time = FakeTime(0.0)
    shared = RateLimiter(RateLimits(windows=((2, 1.0),)), clock=time.clock, sleep=time.sleep)
    a = mock_client(Script([js(200, VALIDATE_OK)]), time, limiter=shared)
    b = mock_client(Script([js(200, VALIDATE_OK)]), time, limiter=shared)
    a.validate(poi())
    b.validate(poi())
    assert time.now == 0.0
    a.validate(poi())
    assert time.now == pytest.approx(1.05)
    assert shared.granted == 3


def test_key_is_refused_to_any_origin_but_the_base_url() -> None:
    """Even a request built by hand for another origin cannot carry the key out."""
    script = Script([js(200, {})])
    client = mock_client(script, FakeTime())
    for url in (
        "https://evil.test/v1/usage",
        "http://api.places.test/v1/usage",
        "https://api.places.test:8443/v1/usage",
    ):
        with pytest.raises(PlaceflowError, match="refusing to send the API key"):
            client._http.get(url, headers={"X-API-Key": KEY})
    assert script.requests == []


def test_gc_is_paused_only_for_the_block_and_left_as_found() -> None:
    """The collector is off inside `gc_paused`, on again after it (even after an error), and
    left off when the caller had turned it off."""
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
