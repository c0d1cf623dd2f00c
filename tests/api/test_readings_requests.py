"""Requests over real loopback HTTP against the spec's other readings: answers lost after
billing on the sync route, bursts of 5xx (HTML 503s too) on accounting calls, unknown fields,
and where a result-file download may be redirected."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.download import download_result
from placeflow.api.errors import OutcomeUnknown, ResultUnavailable, UnsafeRedirect, UsageUnknown
from placeflow.api.models import JobStatus
from placeflow.api.poller import JobPoller
from placeflow.api.retry import RetryPolicy
from placeflow.api.transport import check_redirect
from placeflow.emulator import FaultConfig

from .conftest import KEY
from .loopback_rig import places, served


def test_sync_batch_answer_lost_after_billing_is_not_sent_again() -> None:
    """The sandbox bills an enrich-batch and drops the connection: OutcomeUnknown, one request
    seen, every row billed exactly once (the sandbox's own count)."""
    with served(faults=FaultConfig(sync_reset_after_rate=1.0)) as srv:
        with pytest.raises(OutcomeUnknown) as info:
            srv.client.enrich_batch(places(10))
        key = srv.key()
        sent = srv.count("POST /v1/enrich-batch")
    assert info.value.possible_credits == 10
    assert sent == 1 and key["billed"]["rows"] == key["credits"]["charged"] > 0
    assert key["billed"]["rows_billed_twice"] == 0


def test_sync_errors_that_bill_nothing_are_still_retried() -> None:
    """A 500 and an HTML 503 on validate are answers that bill nothing: retried, then one 200
    and one row billed once."""
    with served() as srv:
        srv.sandbox.inject("POST /v1/validate", "500")
        srv.sandbox.inject("POST /v1/validate", "503_html")
        result = srv.client.validate(places(1)[0])
        key = srv.key()
        seen = srv.stats()["requests"]["POST /v1/validate"]
    assert result.success
    assert seen == {"500": 1, "503": 1, "200": 1}
    assert key["billed"]["rows"] == 1 and key["billed"]["rows_billed_twice"] == 0


def test_usage_survives_a_burst_longer_than_the_request_policy() -> None:
    """Twelve 5xx (HTML 503s among them) in a row on GET /v1/usage, beyond the request
    policy's six attempts: the accounting patience waits them out and the figure comes."""
    with served() as srv:
        srv.sandbox.inject("GET /v1/usage", "500", times=8)
        srv.sandbox.inject("GET /v1/usage", "503_html", times=4)
        usage = srv.client.usage()
        seen = srv.count("GET /v1/usage")
    assert usage.current_usage == 0 and seen == 13


def test_usage_that_cannot_be_had_is_a_typed_unknown() -> None:
    """When the 5xx outlast the accounting patience, UsageUnknown (carrying the last error)
    is raised, not a bare server error."""
    patience = RetryPolicy(max_attempts=4, initial_backoff=1.0, jitter=0.0)
    with served(client={"accounting_retry": patience}) as srv:
        srv.sandbox.inject("GET /v1/usage", "503_html", times=10)
        with pytest.raises(UsageUnknown) as info:
            srv.client.usage()
        seen = srv.count("GET /v1/usage")
    assert seen == 4 and info.value.cause.attempts == 4  # type: ignore[attr-defined]  # a TransientError
    assert "<html>" not in str(info.value) and "an HTML page" in str(info.value)


def test_unknown_fields_and_values_everywhere_are_tolerated(tmp_path: Path) -> None:
    """Responses carrying fields and enum values the spec never names parse: usage, a job's
    submission, polls, its file and a cancel."""
    with served(faults=FaultConfig(unknown_fields=True)) as srv:
        usage = srv.client.usage()
        job = srv.client.submit_enrich_job(places(5), idempotency_key="odd-1")
        final = JobPoller(srv.client, floor=1.0).wait(job)
        verified = download_result(srv.client, final, tmp_path)
        cancel = srv.client.cancel_job(job.batch_id)
    assert usage.period == "rolling_30_days" and verified.lines == 5
    assert cancel.status == "completed" and not cancel.accepted


def test_delete_answers_without_a_cancelled_field_parse() -> None:
    """The spec never shows DELETE's body: an empty 204, `{}`, or one without `cancelled`
    are accepted cancels; an explicit cancelled false on a completed job is not."""
    answers = iter(
        [
            httpx.Response(204),
            httpx.Response(200, json={}),
            httpx.Response(200, json={"batch_id": "job_1", "status": "cancelling"}),
            httpx.Response(200, json={"status": "completed", "cancelled": False}),
        ]
    )
    client = PlaceApiClient(
        base_url="https://api.places.test",
        api_key=KEY,
        transport=httpx.MockTransport(lambda request: next(answers)),
    )
    outcomes = [client.cancel_job("job_1") for _ in range(4)]
    assert [o.accepted for o in outcomes] == [True, True, True, False]


# --- redirects of result files ---------------------------------------------------------------


@contextmanager
def redirector(location: str) -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every GET with a 302 to `location` ("SELF" loops)."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            target = (
                f"http://127.0.0.1:{server.server_address[1]}/again"
                if location == "SELF"
                else location
            )
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/results/x.jsonl.gz", hits
    finally:
        server.shutdown()
        server.server_close()


def _status_with_url(status: JobStatus, url: str) -> JobStatus:
    assert status.results is not None
    files = [f.model_copy(update={"url": url}) for f in status.results.files]
    results = status.results.model_copy(update={"files": files})
    return status.model_copy(update={"results": results})


def test_redirect_within_loopback_is_followed(tmp_path: Path) -> None:
    """A loopback redirector in front of the sandbox's file origin: the one hop is followed
    (both on loopback) and the file verified, no key sent."""
    with served() as srv:
        final = JobPoller(srv.client, floor=1.0).wait(
            srv.client.submit_enrich_job(places(7), idempotency_key="hop-1")
        )
        assert final.results is not None
        with redirector(final.results.files[0].url) as (url, hits):
            verified = download_result(srv.client, _status_with_url(final, url), tmp_path)
        downloads = srv.stats()["downloads"]
    assert verified.lines == 7 and len(hits) == 1
    assert downloads["served"] == 1 and downloads["with_api_key"] == 0


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "https://169.254.169.254/latest/meta-data/",
        "http://10.0.0.8/results/x",
        "SELF",
    ],
)
def test_unsafe_redirects_are_refused_before_the_new_host(tmp_path: Path, target: str) -> None:
    """A redirect off loopback to a link-local, private or plain-http host, or a loop, is
    refused: ResultUnavailable, and the redirector saw one request (four for the loop)."""
    with served() as srv:
        final = JobPoller(srv.client, floor=1.0).wait(
            srv.client.submit_enrich_job(places(3), idempotency_key="hop-2")
        )
        with (
            redirector(target) as (url, hits),
            pytest.raises(ResultUnavailable, match="redirect"),
        ):
            download_result(srv.client, _status_with_url(final, url), tmp_path)
    assert len(hits) == (4 if target == "SELF" else 1)
    assert not list(tmp_path.iterdir())


def test_redirect_rules_for_https_origins() -> None:
    """From https: only https to public hosts; private, link-local, loopback and unresolvable
    hosts and any downgrade to http are refused."""
    src = httpx.URL("https://files.example.com/a")
    public = {"cdn.example.net": ["93.184.216.34"], "inside.example.net": ["10.1.2.3"]}

    def resolve(host: str) -> list[str]:
        if host not in public:
            raise OSError("no such host")
        return public[host]

    check_redirect(
        src, httpx.URL("https://cdn.example.net/b"), loopback_origin=False, resolve=resolve
    )
    for bad in (
        "http://cdn.example.net/b",
        "https://inside.example.net/b",
        "https://169.254.169.254/",
        "https://127.0.0.1/",
        "https://[::1]/",
        "https://nowhere.example.net/",
    ):
        with pytest.raises(UnsafeRedirect):
            check_redirect(src, httpx.URL(bad), loopback_origin=False, resolve=resolve)


def test_plain_http_is_refused_off_loopback_unless_allowed() -> None:
    """http:// to a non-loopback host is refused unless allow_insecure_http; loopback is fine."""
    with pytest.raises(ValueError, match="allow_insecure_http"):
        PlaceApiClient(base_url="http://api.example.com", api_key=KEY)
    PlaceApiClient(base_url="http://api.example.com", api_key=KEY, allow_insecure_http=True).close()
    for local in ("http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787"):
        PlaceApiClient(base_url=local, api_key=KEY).close()
