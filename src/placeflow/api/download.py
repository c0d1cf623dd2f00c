"""Fetching a job's result file and proving it is the one the service meant, before anyone reads it.

The file is streamed to a temporary name while its sha256 and size are computed and its gzip
stream is decompressed (never past a cap) to count lines. Only when size and sha256 match the
job's ``results.files[]``, the gzip stream is complete and the line count equals the job's row
count is it renamed into place. A caller that decompresses the file anyway and proves its
stream and line count there (the pipeline's load does, in DuckDB) passes
``check_content=False``: then only size and sha256 are checked here, and the file's content is
that reader's to refuse. A short or corrupted download is fetched again (bounded). A
URL is always tried, whatever its `expires_at` says (a hint: lifetimes are not promised and
clocks disagree); when the file host refuses it (403, expired) the job is polled once for a
fresh URL, which is used at once. A result listed as several files is fetched and verified
file by file and kept as one. The download goes through the client's credential-free file
client, so the API key never reaches the file host.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import (
    DownloadError,
    ResultTooLarge,
    ResultUnavailable,
    ResultVerificationError,
    UnsafeRedirect,
)
from placeflow.api.models import JobResultFile, JobStatus
from placeflow.api.retry import parse_timestamp
from placeflow.errors import OptionsError
from placeflow.support.text import printable_logger

log = printable_logger("placeflow.api.download")

DEFAULT_MAX_DECOMPRESSED = 2 * 1024**3
"""2 GiB: far above 10,000 result lines, far below what a decompression bomb would produce."""
_REFUSED = frozenset({401, 403, 404, 410})
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class VerifiedFile:
    """A result file on disk whose sha256 and size were checked, and its gzip framing and line
    count too unless `content_checked` is False (then `lines` is what the job reported)."""

    batch_id: str
    path: Path
    sha256: str
    size_bytes: int
    lines: int
    content_checked: bool = True


@dataclass
class _Fetched:
    sha256: str
    size: int
    lines: int
    complete: bool
    inflated: int = 0
    """Bytes the file decompressed to (when its content was checked)."""
    attempts: int = 1
    """Downloads it took."""


class _Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Retryable(Exception):
    pass


class _GzipLines:
    """Decompresses a gzip stream chunk by chunk, counting lines, refusing to grow past `cap`."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.out = 0
        self.lines = 0
        self.last = b"\n"
        self.ended = False
        self.broken = False
        self._d = zlib.decompressobj(wbits=31)

    def feed(self, data: bytes) -> None:
        while data and not self.broken:
            if self._d.eof:  # a new gzip member follows the last one
                self._d = zlib.decompressobj(wbits=31)
            try:
                chunk = self._d.decompress(data, _CHUNK)
            except zlib.error:
                self.broken = True
                return
            if chunk:
                self.out += len(chunk)
                if self.out > self.cap:
                    raise _TooLarge
                self.lines += chunk.count(b"\n")
                self.last = chunk[-1:]
            self.ended = self._d.eof
            data = self._d.unused_data if self._d.eof else self._d.unconsumed_tail

    @property
    def complete(self) -> bool:
        return self.ended and not self.broken

    def line_count(self) -> int:
        return self.lines + (1 if self.out and self.last != b"\n" else 0)


class _TooLarge(Exception):
    pass


def local_name(batch_id: str) -> str:
    """A file name for a job's result that the server cannot steer: its batch_id when that is
    plain (letters, digits, _ and -), else a digest of it. Never a path from the server."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,100}", batch_id):
        return batch_id
    return "job-" + hashlib.sha256(batch_id.encode()).hexdigest()[:32]


def download_result(
    client: PlaceApiClient,
    status: JobStatus,
    dest_dir: Path,
    *,
    max_attempts: int = 3,
    max_refreshes: int = 3,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED,
    check_content: bool = True,
) -> VerifiedFile:
    """Download and verify the result file of a completed job into `dest_dir` (or of a job
    cancelled or failed part way whose processed rows the service published).

    Returns the verified file, named ``{batch_id}.jsonl.gz``. Raises `ResultUnavailable`,
    `ResultVerificationError` or `ResultTooLarge`; a partial file is never left behind.
    `check_content=False` leaves the gzip stream and the line count to the caller's reader.
    A result the service splits across several files (`results.files[]`, lines in order) is
    fetched file by file, each verified against its own size and sha256, and kept as one file:
    their gzip streams one after another, which gzip readers take as one stream. The returned
    sha256 and size are then that file's (each part's were checked as published).
    """
    if max_attempts < 1 or max_refreshes < 0:
        raise OptionsError("need max_attempts >= 1 and max_refreshes >= 0")
    batch_id = status.batch_id
    files, expected_lines = _files_of(status)
    dest_dir.mkdir(parents=True, exist_ok=True)
    name = local_name(batch_id)
    final = dest_dir / f"{name}.jsonl.gz"
    stem = f".{name}.{uuid.uuid4().hex}"
    parts = [dest_dir / f"{stem}.{index}.part" for index in range(len(files))]
    joined = dest_dir / f"{stem}.part"
    fetched: list[_Fetched] = []
    try:
        left = max_decompressed_bytes
        for index, part in enumerate(parts):
            got = _download_part(
                client, batch_id, files, index, part, expected_lines=expected_lines,
                cap=left if check_content else None, limit=max_decompressed_bytes,
                max_attempts=max_attempts, max_refreshes=max_refreshes,
            )  # fmt: skip
            fetched.append(got)
            left -= got.inflated
        if check_content:
            lines = sum(f.lines for f in fetched)
            broken = [i for i, f in enumerate(fetched) if not f.complete]
            if broken or lines != expected_lines:
                # The bytes are exactly what the service published: fetching again cannot help.
                of = (
                    f" of file {broken[0] + 1} of {len(files)}" if broken and len(files) > 1 else ""
                )
                what = f"gzip stream{of} is incomplete" if broken else "line count differs"
                merged = _Fetched(fetched[0].sha256, sum(f.size for f in fetched), lines, False)
                tries = max(f.attempts for f in fetched)
                raise _mismatch(batch_id, files[0], expected_lines, merged, tries, what)
        if len(parts) == 1:
            sha256, size = fetched[0].sha256, fetched[0].size
            os.replace(parts[0], final)
        else:
            sha256, size = _join(parts, joined)
            os.replace(joined, final)
    finally:
        for leftover in (*parts, joined):
            leftover.unlink(missing_ok=True)
    lines = sum(f.lines for f in fetched) if check_content else expected_lines
    return VerifiedFile(batch_id, final, sha256, size, lines, check_content)


def _download_part(
    client: PlaceApiClient,
    batch_id: str,
    files: list[JobResultFile],
    index: int,
    part: Path,
    *,
    expected_lines: int,
    cap: int | None,
    limit: int,
    max_attempts: int,
    max_refreshes: int,
) -> _Fetched:
    """The job's `index`-th result file of `files` into `part`, its size and sha256 as
    published (a refused URL replaced by the same file's in a fresh read of the job)."""
    count, meta = len(files), files[index]
    attempts = refreshes = 0
    of = f" (file {index + 1} of {count})" if count > 1 else ""
    while True:
        # `expires_at` is only a hint: the lifetime is not promised and the two clocks may
        # disagree by more than it. The URL is always tried; only the origin's refusal
        # means it is stale, and then a fresh one is fetched and used at once.
        attempts += 1
        try:
            fetched = _fetch(client, meta, part, cap)
        except _Refused as refused:
            attempts -= 1  # a refused URL is not a bad download: get a fresh URL instead
            if refreshes >= max_refreshes:
                raise ResultUnavailable(
                    f"job {batch_id}: result URL{of} refused "
                    f"({refused.status}{_hint(meta, client)}) even after {refreshes} fresh "
                    "URL(s) used at once; the file host refuses this job's file. Poll the "
                    "job again later.",
                    batch_id=batch_id,
                ) from None
            refreshes += 1
            log.warning(
                "job %s: result URL%s refused (%s%s); polling for a fresh one",
                batch_id,
                of,
                refused.status,
                _hint(meta, client),
            )
            fresh = _files_of(client.job_status(batch_id))[0]
            if len(fresh) != count:
                raise ResultUnavailable(
                    f"job {batch_id}: its result files changed from {count} to {len(fresh)}"
                    " between two reads; poll the job again later.",
                    batch_id=batch_id,
                ) from None
            meta = fresh[index]
            continue
        except UnsafeRedirect as exc:
            raise ResultUnavailable(f"job {batch_id}: {exc}", batch_id=batch_id) from None
        except _TooLarge:
            raise ResultTooLarge(
                f"job {batch_id}: result file{of} decompresses to more than {limit} bytes"
                " (with the files before it); deleted unread. Raise max_decompressed_bytes"
                " only if the file is trusted.",
                batch_id=batch_id,
                limit=limit,
            ) from None
        except _Retryable as exc:
            got: _Fetched | None = None
            reason = str(exc)
        else:
            got = fetched
            if fetched.size == meta.size_bytes and fetched.sha256 == meta.sha256.lower():
                fetched.attempts = attempts
                return fetched
            reason = f"size {fetched.size} sha256 {fetched.sha256[:12]}…"
        if attempts >= max_attempts and got is None:
            raise ResultUnavailable(
                f"job {batch_id}: result file{of} could not be fetched in {attempts} "
                f"attempt(s) ({reason}); try again later.",
                batch_id=batch_id,
            )
        if attempts >= max_attempts:
            raise _mismatch(batch_id, meta, expected_lines, got, attempts, reason + of)
        log.warning(
            "job %s: download attempt %d%s failed (%s); fetching again",
            batch_id,
            attempts,
            of,
            reason,
        )
        client.pause(client.retry.backoff(attempts, 0.5))


def _join(parts: list[Path], joined: Path) -> tuple[str, int]:
    """The verified parts written one after another into `joined`: its sha256 and size."""
    digest, size = hashlib.sha256(), 0
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while chunk := f.read(_CHUNK * 16):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
    return digest.hexdigest(), size


def _hint(meta: JobResultFile, client: PlaceApiClient) -> str:
    """What `expires_at` said, for the log: by this machine's clock, which may be skewed."""
    expires = parse_timestamp(meta.expires_at)
    if expires is None:
        return ""
    left = expires - client.wall_clock()
    return f"; expires_at {'in' if left >= 0 else 'past by'} {abs(left):.0f} s by this clock"


def _files_of(status: JobStatus) -> tuple[list[JobResultFile], int]:
    """The job's result files, in order, and the number of lines they must hold together."""
    results = status.results
    ended = status.status in ("completed", "cancelled", "failed")  # failed part way: its rows
    if not ended or results is None or not results.files:
        raise ResultUnavailable(
            f"job {status.batch_id} is {status.status} and has no result file; wait for it to "
            "complete before downloading.",
            batch_id=status.batch_id,
        )
    expected = results.total_items
    if status.status == "completed" and expected != status.total_items:
        raise DownloadError(
            f"job {status.batch_id} completed with {status.total_items} rows but its results "
            f"claim {expected}; report this to the service.",
            batch_id=status.batch_id,
        )
    if len(results.files) > max(1, expected):
        raise DownloadError(
            f"job {status.batch_id} lists {len(results.files)} result files for {expected}"
            " rows; report this to the service.",
            batch_id=status.batch_id,
        )
    return list(results.files), expected


def _fetch(client: PlaceApiClient, meta: JobResultFile, part: Path, cap: int | None) -> _Fetched:
    """Stream the file to `part`, hashing it; with a `cap`, decompress it too, counting lines."""
    digest = hashlib.sha256()
    size = 0
    lines = _GzipLines(cap) if cap is not None else None
    try:
        with client.stream_file(meta.url) as response:
            if response.status_code in _REFUSED:
                raise _Refused(response.status_code)
            if not response.is_success:
                raise _Retryable(f"HTTP {response.status_code}")
            with part.open("wb") as out:
                for chunk in _raw_chunks(response):
                    size += len(chunk)
                    digest.update(chunk)
                    out.write(chunk)
                    if lines is not None:
                        lines.feed(chunk)
                    if size > meta.size_bytes:
                        break  # longer than published: stop reading a possibly endless stream
    except httpx.TransportError as exc:
        raise _Retryable(f"transfer broke off ({type(exc).__name__})") from None
    if lines is None:
        return _Fetched(digest.hexdigest(), size, 0, complete=False)
    return _Fetched(digest.hexdigest(), size, lines.line_count(), lines.complete, lines.out)


def _raw_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The body as sent (no Content-Encoding decoding), chunk by chunk."""
    if response.is_stream_consumed:  # an in-process transport hands over a body already read
        body = response.content
        for start in range(0, len(body), _CHUNK):
            yield body[start : start + _CHUNK]
    else:
        yield from response.iter_raw(_CHUNK)


def _mismatch(
    batch_id: str,
    meta: JobResultFile,
    expected_lines: int,
    fetched: _Fetched | None,
    attempts: int,
    reason: str,
) -> ResultVerificationError:
    return ResultVerificationError(
        f"job {batch_id}: result file failed verification after {attempts} attempt(s) "
        f"({reason}; expected size {meta.size_bytes}, sha256 {meta.sha256[:12]}…, "
        f"{expected_lines} lines). Poll the job again later; do not load this file.",
        batch_id=batch_id,
        expected_sha256=meta.sha256,
        actual_sha256=fetched.sha256 if fetched else None,
        expected_size=meta.size_bytes,
        actual_size=fetched.size if fetched else None,
        expected_lines=expected_lines,
        actual_lines=fetched.lines if fetched else None,
        attempts=attempts,
    )
