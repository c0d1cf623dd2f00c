"""Telling a run stopped by its storage (a full or read-only disk) from other errors."""

from __future__ import annotations

import errno

import duckdb

from placeflow.store.diskfull import StorageStop, stop_message, storage_stop


def test_os_errors_of_a_full_or_read_only_disk_are_storage_stops() -> None:
    """ENOSPC, EDQUOT, EROFS and EFBIG are told, with the OS's words and the path."""
    full = storage_stop(OSError(errno.ENOSPC, "No space left on device", "/d/runs/x.part"))
    assert full == StorageStop("No space left on device", "/d/runs/x.part")
    for code in (errno.EDQUOT, errno.EROFS, errno.EFBIG):
        assert storage_stop(OSError(code, "x")) is not None
    assert storage_stop(OSError(errno.ENOENT, "No such file or directory")) is None


def test_duckdb_errors_and_chains_are_read_for_the_os_words() -> None:
    """DuckDB's error names the file and the OS's words; an error raised from one is told."""
    wal = duckdb.IOException('Could not write file "/d/wh.duckdb.wal": No space left on device')
    assert storage_stop(wal) == StorageStop("No space left on device", "/d/wh.duckdb.wal")
    outer = RuntimeError("could not open")
    outer.__cause__ = OSError(errno.EROFS, "Read-only file system", "/ro/wh.duckdb")
    assert storage_stop(outer) == StorageStop("Read-only file system", "/ro/wh.duckdb")
    assert storage_stop(ValueError("No space left on device")) is None  # not the OS's, nor DuckDB's


def test_the_message_names_the_command_that_finishes_the_run() -> None:
    """With a run, the resume command; before one was recorded, the same command again."""
    stop = StorageStop("No space left on device", "/d/wh.duckdb.wal")
    assert "`placeflow resume run_1 --db /d/wh.duckdb`" in stop_message(
        stop, "run_1", "/d/wh.duckdb"
    )
    assert "same command again" in stop_message(stop, None, "/d/wh.duckdb")
