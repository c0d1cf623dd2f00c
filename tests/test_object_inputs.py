"""A run whose inputs are in object storage (s3://, moto's S3 server on loopback): read as a
local file is, every row named by its object's URL."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.emulator import Sandbox
from placeflow.errors import InputError
from placeflow.options import RunOptions
from placeflow.runner.target import Target
from tests.s3server import S3Server, s3_server
from tests.sandbox_target import served as served_sandbox

__all__ = ["s3_server"]  # the fixture

KEY = "sk_objects_paid_key_77"


@pytest.fixture
def served() -> Iterator[tuple[Sandbox, Target]]:
    with served_sandbox(KEY) as pair:
        yield pair


def put_places(server: S3Server, key: str, n: int, start: int = 0) -> None:
    """A CSV of `n` places uploaded to the server at `key` (bucket/path)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["id", "name", "address", "city", "country"])
    for i in range(start, start + n):
        writer.writerow([f"u{i}", f"Corner Shop {i}", f"{i} Elm Street", "Springfield", "USA"])
    fs = server.storage.filesystem("s3")
    with fs.open_output_stream(key) as out:
        out.write(text.getvalue().encode())


def test_a_run_reads_its_inputs_from_s3(
    served: tuple[Sandbox, Target], s3_server: S3Server, tmp_path: Path
) -> None:
    """Two objects named by a glob in s3:// are read and sent; the sandbox billed each place;
    the run records the URLs it was given and each row its object's URL; the same command
    again finds its run (same objects: same identity) and buys nothing."""
    sandbox, target = served
    bucket = s3_server.new_bucket()
    put_places(s3_server, f"{bucket}/in/a.csv", 12)
    put_places(s3_server, f"{bucket}/in/b.csv", 8, start=12)
    url = f"s3://{bucket}/in/*.csv"
    db = tmp_path / "wh.duckdb"
    options = RunOptions(route="sync", force=True)
    summary = placeflow.run([url], options=options, db=db, target=target,
                            storage=s3_server.storage)  # fmt: skip
    assert summary.status == "completed" and summary.submitted == 20
    with duckdb.connect(str(db), read_only=True) as con:
        files = sorted(r[0] for r in con.execute(
            "select distinct source_file from run_rows").fetchall())  # fmt: skip
        (inputs,) = con.execute("select inputs from runs").fetchone() or ("",)
    assert files == [f"s3://{bucket}/in/a.csv", f"s3://{bucket}/in/b.csv"]
    assert url in inputs
    account = sandbox.backend.keys[KEY].account
    assert sum(account.rows_billed.values()) == 20 and account.rows_billed_twice() == []
    again = placeflow.run([url], options=RunOptions(route="sync"), db=db, target=target,
                          storage=s3_server.storage)  # fmt: skip
    assert again.submitted == 0
    assert sum(account.rows_billed.values()) == 20


def test_a_missing_object_is_an_input_error(s3_server: S3Server, tmp_path: Path) -> None:
    """A URL naming nothing is refused before anything is read or spent, saying which."""
    from placeflow.runner.prepare import as_source

    bucket = s3_server.new_bucket()
    source = as_source([f"s3://{bucket}/nothing/*.csv"], s3_server.storage)
    with pytest.raises(InputError, match="no such object"):
        source.identity()
