"""Result downloads against a scripted file host: verify, re-fetch, refresh, cap, never a key."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from placeflow.api.download import download_result
from placeflow.api.errors import ResultTooLarge, ResultUnavailable, ResultVerificationError
from placeflow.api.models import JobStatus

from .conftest import FakeTime, Script, js, mock_client

FILE_URL = "https://files.places.test/results/job_1/result.jsonl.gz?sig=abc"
GOOD = gzip.compress(b"".join(b'{"success":true,"id":"%d"}\n' % i for i in range(5)), mtime=0)


def status_body(
    body: bytes, *, lines: int = 5, expires: str = "2026-09-21T15:00:00Z", url: str = FILE_URL
) -> dict[str, Any]:
    return {
        "batch_id": "job_1",
        "status": "completed",
        "created_at": "2026-09-21T14:00:00Z",
        "total_items": lines,
        "results": {
            "format": "jsonl.gz",
            "total_items": lines,
            "files": [
                {
                    "url": url,
                    "size_bytes": len(body),
                    "sha256": hashlib.sha256(body).hexdigest(),
                    "expires_at": expires,
                }
            ],
        },
    }


def status_of(body: bytes, **kwargs: Any) -> JobStatus:
    return JobStatus.model_validate(status_body(body, **kwargs))


def fetch(script: Script, status: JobStatus, tmp_path: Path, **kwargs: Any) -> Any:
    time = FakeTime(1_790_000_000.0)  # 2026-09-21T14:13:20Z
    return download_result(mock_client(script, time), status, tmp_path, **kwargs)


def test_verified_file_lands_under_its_batch_id(tmp_path: Path) -> None:
    """A good file is verified (sha256, size, 5 lines) and renamed into place, no key sent."""
    script = Script([httpx.Response(200, content=GOOD)])
    result = fetch(script, status_of(GOOD), tmp_path)
    assert result.path == tmp_path / "job_1.jsonl.gz" and result.path.read_bytes() == GOOD
    assert (result.lines, result.size_bytes) == (5, len(GOOD))
    assert "X-API-Key" not in script.requests[0].headers
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job_1.jsonl.gz"]


def test_corrupted_then_good_download_is_retried(tmp_path: Path) -> None:
    """A download whose sha256 differs is fetched again and the good copy kept."""
    bad = GOOD[:-12] + bytes([GOOD[-12] ^ 0xFF]) + GOOD[-11:]
    script = Script([httpx.Response(200, content=bad), httpx.Response(200, content=GOOD)])
    assert fetch(script, status_of(GOOD), tmp_path).sha256 == hashlib.sha256(GOOD).hexdigest()
    assert len(script.requests) == 2


def test_broken_transfer_is_retried(tmp_path: Path) -> None:
    """A connection that breaks off mid-file is retried."""
    script = Script([httpx.RemoteProtocolError("peer closed"), httpx.Response(200, content=GOOD)])
    assert fetch(script, status_of(GOOD), tmp_path).lines == 5


def test_persistent_truncation_gives_up_with_expected_and_actual(tmp_path: Path) -> None:
    """Always-short downloads end in ResultVerificationError after max_attempts, file removed."""
    script = Script([httpx.Response(200, content=GOOD[:20])])
    with pytest.raises(ResultVerificationError) as info:
        fetch(script, status_of(GOOD), tmp_path, max_attempts=3)
    error = info.value
    assert len(script.requests) == 3 and error.attempts == 3
    assert (error.expected_size, error.actual_size) == (len(GOOD), 20)
    assert error.expected_sha256 == hashlib.sha256(GOOD).hexdigest() != error.actual_sha256
    assert list(tmp_path.iterdir()) == []


def test_incomplete_gzip_with_matching_sha_is_refused_at_once(tmp_path: Path) -> None:
    """If the published file itself is a cut-off gzip, it is refused without pointless retries."""
    cut = GOOD[:-8]
    script = Script([httpx.Response(200, content=cut)])
    with pytest.raises(ResultVerificationError, match="gzip stream is incomplete"):
        fetch(script, status_of(cut), tmp_path)
    assert len(script.requests) == 1 and list(tmp_path.iterdir()) == []


def test_line_count_must_equal_total_items(tmp_path: Path) -> None:
    """A verified file with 5 lines for a 6-row job is refused."""
    script = Script([httpx.Response(200, content=GOOD)])
    with pytest.raises(ResultVerificationError) as info:
        fetch(script, status_of(GOOD, lines=6), tmp_path)
    assert (info.value.expected_lines, info.value.actual_lines) == (6, 5)


def test_multi_member_gzip_and_missing_final_newline_count_right(tmp_path: Path) -> None:
    """Lines are counted across gzip members, and a last line without a newline counts."""
    body = gzip.compress(b"a\nb\n", mtime=0) + gzip.compress(b"c\nd", mtime=0)
    script = Script([httpx.Response(200, content=body)])
    assert fetch(script, status_of(body, lines=4), tmp_path).lines == 4


def test_unchecked_content_keeps_published_bytes_for_the_reader(tmp_path: Path) -> None:
    """check_content=False checks size and sha256 only: a cut-off gzip the service published is
    kept, with the job's line count, for the reader that decompresses it to refuse."""
    cut = GOOD[:-8]
    script = Script([httpx.Response(200, content=cut)])
    result = fetch(script, status_of(cut, lines=6), tmp_path, check_content=False)
    assert result.path.read_bytes() == cut and len(script.requests) == 1
    assert (result.lines, result.content_checked) == (6, False)


def test_unchecked_content_still_refuses_other_bytes(tmp_path: Path) -> None:
    """check_content=False still fetches again and refuses bytes whose sha256 differs."""
    bad = GOOD[:-12] + bytes([GOOD[-12] ^ 0xFF]) + GOOD[-11:]
    script = Script([httpx.Response(200, content=bad)])
    with pytest.raises(ResultVerificationError):
        fetch(script, status_of(GOOD), tmp_path, check_content=False, max_attempts=2)
    assert len(script.requests) == 2 and list(tmp_path.iterdir()) == []


def test_decompression_bomb_is_stopped_at_the_cap(tmp_path: Path) -> None:
    """A file that inflates past max_decompressed_bytes raises ResultTooLarge, nothing kept."""
    bomb = gzip.compress(b"\n" * 5_000_000, mtime=0)
    script = Script([httpx.Response(200, content=bomb)])
    with pytest.raises(ResultTooLarge) as info:
        fetch(script, status_of(bomb), tmp_path, max_decompressed_bytes=1_000_000)
    assert info.value.limit == 1_000_000 and list(tmp_path.iterdir()) == []


def test_url_past_its_expires_at_is_still_tried(tmp_path: Path) -> None:
    """expires_at is a hint (clocks disagree): a URL already past it is tried, and it works."""
    script = Script([httpx.Response(200, content=GOOD)])
    fetch(script, status_of(GOOD, expires="2026-09-21T14:00:00Z"), tmp_path)
    assert [str(r.url) for r in script.requests] == [FILE_URL]
    assert "X-API-Key" not in script.requests[0].headers


def test_refused_url_gets_a_fresh_one(tmp_path: Path) -> None:
    """A 403 from the file host leads to one job poll for a fresh URL, then success."""
    script = Script(
        [
            js(403, {"error": "request has expired"}),
            js(200, status_body(GOOD)),
            httpx.Response(200, content=GOOD),
        ]
    )
    assert fetch(script, status_of(GOOD), tmp_path).lines == 5
    assert [r.method + " " + r.url.host for r in script.requests] == [
        "GET files.places.test",
        "GET api.places.test",
        "GET files.places.test",
    ]


def test_url_refused_every_time_is_unavailable(tmp_path: Path) -> None:
    """If fresh URLs keep being refused, ResultUnavailable ends it after max_refreshes."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.places.test":
            return js(200, status_body(GOOD))
        return js(403, {"error": "denied"})

    script = Script([answer])
    with pytest.raises(ResultUnavailable, match="refused"):
        fetch(script, status_of(GOOD), tmp_path, max_refreshes=2)
    assert len(script.requests) == 5  # 3 tries of the file, 2 polls between


def test_job_without_results_is_unavailable(tmp_path: Path) -> None:
    """A failed job has no result file; asking for one raises ResultUnavailable unsent."""
    failed = JobStatus(batch_id="job_2", status="failed", created_at="x", total_items=3)
    script = Script([])
    with pytest.raises(ResultUnavailable, match="no result file"):
        fetch(script, failed, tmp_path)
    assert script.requests == []


def test_file_host_down_is_unavailable_not_unverified(tmp_path: Path) -> None:
    """A file host that only answers 500 ends in ResultUnavailable after max_attempts."""
    script = Script([js(500, {"error": "down"})])
    with pytest.raises(ResultUnavailable, match="could not be fetched in 2 attempt"):
        fetch(script, status_of(GOOD), tmp_path, max_attempts=2)
    assert len(script.requests) == 2 and list(tmp_path.iterdir()) == []


def test_a_batch_id_never_becomes_a_path() -> None:
    """Whatever batch_id the server sends, the local file name stays inside the destination."""
    from placeflow.api.download import local_name

    assert local_name("job_0123456789abcdef01234567") == "job_0123456789abcdef01234567"
    for hostile in ("../../etc/passwd", "/abs/path", "a/b", "..", "x" * 300, "name\x00.gz"):
        name = local_name(hostile)
        assert "/" not in name and ".." not in name and "\x00" not in name and len(name) <= 100
