"""An S3-compatible server on loopback for the tests that need one: moto's server (the dev
dependency `moto[s3]` with Flask), started on a free port and stopped with the block.

`s3_server` is a pytest fixture (import it into a test module): one server for the session, a
new bucket for each test that asks for `bucket`.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from placeflow.support.objects import Storage
from placeflow.support.redact import Secret

STARTUP_TIMEOUT = 60.0


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    """``http://127.0.0.1:PORT``."""

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables that point a process at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing-secret",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    @property
    def storage(self) -> Storage:
        """What `placeflow.config.storage_settings` reads from `env`."""
        return Storage(
            endpoint_url=self.endpoint,
            access_key_id="testing",
            secret_access_key=Secret("testing-secret"),
            region="us-east-1",
            allow_http=True,
        )

    def new_bucket(self) -> str:
        import pyarrow.fs as pafs  # type: ignore[import-untyped]  # pyarrow ships no stubs

        name = f"pf-{secrets.token_hex(4)}"
        fs = pafs.S3FileSystem(
            access_key="testing", secret_key="testing-secret", region="us-east-1",
            endpoint_override=self.endpoint.removeprefix("http://"), scheme="http",
            allow_bucket_creation=True,
        )  # fmt: skip
        fs.create_dir(name)
        return name


@contextmanager
def start() -> Iterator[S3Server]:
    """moto's server on 127.0.0.1, a free port; stopped (and waited for) after the block. Its
    log goes to a file (a pipe nobody reads would fill and stall it)."""
    exe = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if exe is None:
        raise RuntimeError("moto_server is not installed (the dev dependency moto[s3] and flask)")
    with tempfile.TemporaryDirectory(prefix="placeflow-s3-") as folder:
        log = Path(folder) / "moto.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [exe, "-H", "127.0.0.1", "-p", "0"], stdout=out, stderr=subprocess.STDOUT
            )
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while proc.poll() is None and time.monotonic() < deadline:
                found = re.search(r"Running on (http://127\.0\.0\.1:\d+)", log.read_text())
                if found:
                    yield S3Server(found.group(1))
                    return
                time.sleep(0.1)  # the server's start, not a test's timing
            raise RuntimeError(f"moto_server did not start: {log.read_text()[-2000:]}")
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(20)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One S3-compatible server on loopback for the session."""
    with start() as server:
        yield server
