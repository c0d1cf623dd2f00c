"""A real PostgreSQL server for tests and benchmarks: initdb and pg_ctl from the Debian package
(/usr/lib/postgresql/*/bin) in a temporary directory, on a free loopback port, with a password.

As root (CI containers) the server runs as the `postgres` user the package creates, since
PostgreSQL refuses to run as root. `start()` raises `PostgresUnavailable` when the binaries are
missing; the test fixture turns that into a skip on a developer machine and a failure in CI.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

USER = "placeflow"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL's server binaries are not installed."""


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    password: str
    database: str
    socket_dir: Path
    bin_dir: Path

    def url(self, *, with_password: bool = False) -> str:
        auth = f"{self.user}:{self.password}" if with_password else self.user
        return f"postgresql://{auth}@{self.host}:{self.port}/{self.database}"

    def psql(self, sql: str) -> str:
        """Run SQL through psql over TCP with the password; its unaligned, tuples-only output."""
        psql = shutil.which("psql") or str(self.bin_dir / "psql")
        done = subprocess.run(
            [
                psql,
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                self.database,
                "-c",
                sql,
            ],
            env={**os.environ, "PGPASSWORD": self.password},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout


def bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise PostgresUnavailable(
            "PostgreSQL's server binaries are missing (no /usr/lib/postgresql/*/bin/initdb):"
            " install them with `apt-get install postgresql`"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def start(*, settings: dict[str, str] | None = None) -> Iterator[PgServer]:
    """Start a throwaway server; stop it and remove its files on exit."""
    bins = bin_dir()
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    root = Path(tempfile.mkdtemp(prefix="placeflow-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    password = secrets.token_urlsafe(18)
    pwfile = root / "pw"
    pwfile.write_text(password + "\n", encoding="utf-8")
    if as_root:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        shutil.chown(pwfile, "postgres")
    port = _free_port()
    options = {
        "listen_addresses": "'127.0.0.1'",
        "port": str(port),
        "unix_socket_directories": f"'{sock}'",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        **(settings or {}),
    }
    started = False
    try:
        subprocess.run(
            [
                *prefix,
                str(bins / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        with (data / "postgresql.auto.conf").open("a", encoding="utf-8") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in options.items())
        subprocess.run(
            [
                *prefix,
                str(bins / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=True,
            capture_output=True,
            timeout=90,
        )
        started = True
        yield PgServer("127.0.0.1", port, USER, password, "postgres", sock, bins)
    finally:
        if started:
            subprocess.run(
                [*prefix, str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                check=False,
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)
