"""Loading a batch of chunks' verified files in one transaction (issue 47): the same rows and
ledger as loading them one at a time, nothing written when one file is refused, and a run's
batch then loads each file alone so that the bad one fails only its own chunk."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.errors import LoadError
from placeflow.events import Event, RowsLoaded
from placeflow.pipeline.fetch import Fetched
from placeflow.pipeline.load import load_result, load_results
from placeflow.runner.batch import BATCH_WAIT, LONG_WAIT, Batch
from placeflow.runner.steps import Stages, direct
from placeflow.state.runstate import RunState
from placeflow.store.writer import GAP, Writer
from tests.warehouse.helpers import (
    T0,
    add_run,
    attribute,
    enrich_line,
    keys,
    plan_chunk,
    table_rows,
    write_lines,
)
from tests.warehouse.test_readers_turn import Clock

CHUNKS = 3
PER_CHUNK = 4


def _planned(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> list[Fetched]:
    """A run of CHUNKS job chunks, each with its result file written (the third place of each
    failed, the rest answered with a phone)."""
    add_run(con, "r1")
    files = []
    for chunk_no in range(CHUNKS):
        places = keys(PER_CHUNK, prefix=f"c{chunk_no}-")
        plan_chunk(con, "r1", chunk_no, places)
        lines = [
            enrich_line(k, success=False, error="no")
            if i == 2
            else enrich_line(k, attributes={"phone": attribute({"number": f"+1 555 {i}"})})
            for i, k in enumerate(places)
        ]
        path = write_lines(tmp_path / f"c{chunk_no}.jsonl.gz", lines)
        files.append(Fetched(chunk_no, path, f"ref{chunk_no}", "job", PER_CHUNK, False, None))
    return files


def _written(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    ledger = "select chunk_no, ref, kind, credits, note from credit_ledger order by all"
    return {
        "enrichments": table_rows(con, "enrichments", "chunk_no, position"),
        "jobs": con.execute(
            "select chunk_no, status, rows_loaded, credits_charged, credits_released, error"
            " from jobs order by chunk_no"
        ).fetchall(),
        "ledger": con.execute(ledger).fetchall(),
    }


def test_a_batch_writes_what_loading_each_file_alone_writes(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Three chunks loaded in one call: the same outcome rows, jobs and ledger entries as three
    loads of one file each; every chunk loaded with its own charge and release."""
    files = _planned(con, tmp_path)
    infos = load_results(con, run_id="r1", kind="enrich", files=files, now=T0)
    batched = _written(con)
    for f in files:
        load_result(
            con, run_id="r1", chunk_no=f.chunk_no, kind="enrich", path=f.path, billing="job",
            held=PER_CHUNK, ref=f.ref, now=T0,
        )  # fmt: skip
    assert _written(con) == batched
    assert [(i.rows, i.succeeded, i.charged, i.released) for i in infos] == [(4, 3, 3, 1)] * 3
    assert [row[:5] for row in batched["jobs"]] == [(n, "loaded", 4, 3, 1) for n in range(3)]
    assert len(batched["enrichments"]) == CHUNKS * PER_CHUNK
    kinds = [(row[0], row[2], row[3]) for row in batched["ledger"] if row[2] != "hold"]
    assert kinds == [(n, k, c) for n in range(3) for k, c in (("charge", 3), ("release", 1))]


def test_a_batch_with_a_refused_file_writes_nothing(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A batch whose second file carries another place than planned is refused whole: no
    outcome row, no charge, every chunk still completed."""
    files = _planned(con, tmp_path)
    write_lines(files[1].path, [enrich_line(k) for k in keys(PER_CHUNK, prefix="other-")])
    before = _written(con)
    with pytest.raises(LoadError, match="batch of 3"):
        load_results(con, run_id="r1", kind="enrich", files=files, now=T0)
    assert _written(con) == before
    assert {row[1] for row in before["jobs"]} == {"completed"}


def test_a_runs_batch_loads_the_good_files_when_one_is_refused(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A run's batch with a file cut short: loaded again one file at a time, the other two
    chunks loaded (their rows announced), the bad one failed on its own with the reason."""
    files = _planned(con, tmp_path)
    files[2].path.write_bytes(files[2].path.read_bytes()[:-9])  # the gzip stream breaks off
    events: list[Event] = []
    failed: dict[int, Exception] = {}
    r = Stages(step=direct, emit=events.append)
    state = RunState(Writer.over(con), "r1", clock=lambda: T0)
    batch = Batch(
        r, state, kind="enrich", emit=events.append, failed=lambda n, e: failed.setdefault(n, e)
    )
    for f in files:
        batch.add(f)
    assert not _written(con)["enrichments"]  # nothing loaded before the batch is
    batch.flush()
    jobs = {row[0]: row[1] for row in _written(con)["jobs"]}
    assert jobs == {0: "loaded", 1: "loaded", 2: "completed"}
    assert list(failed) == [2] and isinstance(failed[2], LoadError)
    assert [e.chunk_no for e in events if isinstance(e, RowsLoaded)] == [0, 1]
    assert len(r.stages["load"]) == 2


def test_a_batch_loads_once_it_holds_a_row_group(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files join the batch until their rows reach BATCH_ROWS (here 8: two chunks of 4): then
    they are loaded at once, in one call of the load stage; the next file waits."""
    monkeypatch.setattr("placeflow.runner.batch.BATCH_ROWS", 2 * PER_CHUNK)
    files = _planned(con, tmp_path)
    calls: list[str] = []

    def step(name: str, fn: Any) -> Any:
        calls.append(name)
        return fn

    r = Stages(step=step, emit=lambda e: None)
    state = RunState(Writer.over(con), "r1", clock=lambda: T0)
    batch = Batch(r, state, kind="enrich", emit=lambda e: None, failed=lambda n, e: None)
    for f in files:
        batch.add(f)
    assert calls == ["load"] and [f.chunk_no for f, _ in batch.files] == [2]
    loaded = con.execute("select chunk_no from jobs where status = 'loaded' order by 1")
    assert loaded.fetchall() == [(0,), (1,)]


def test_a_wait_on_the_service_loads_the_batch_when_long_or_late(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A wait of moments keeps the batch (the sender's next job comes at once), as does any
    wait of another thread; a wait of LONG_WAIT loads it, and so does a short one once its
    oldest file has waited BATCH_WAIT (the batch's own clock)."""
    files = _planned(con, tmp_path)
    now = [0.0]
    r = Stages(step=direct, emit=lambda e: None)
    state = RunState(Writer.over(con), "r1", clock=lambda: T0)
    batch = Batch(
        r, state, kind="enrich", emit=lambda e: None, failed=lambda n, e: None,
        clock=lambda: now[0],
    )  # fmt: skip
    batch.add(files[0])
    batch.before_wait(None)
    batch.before_wait(LONG_WAIT / 10)
    other = threading.Thread(target=batch.before_wait, args=(LONG_WAIT,))
    other.start()
    other.join()
    assert len(batch.files) == 1
    batch.before_wait(LONG_WAIT)
    assert not batch.files and len(r.stages["load"]) == 1
    batch.add(files[1])
    now[0] += BATCH_WAIT
    batch.before_wait(None)
    assert not batch.files and len(r.stages["load"]) == 2
    loaded = con.execute("select count(*) from jobs where status = 'loaded'").fetchone()
    assert loaded == (2,)


def _stretched(tmp_path: Path) -> tuple[Clock, Writer, Batch, list[Fetched]]:
    """A run's writer holding its file in stretches of a second, its batch on the same clock."""
    clock = Clock()
    wh = Writer(tmp_path / "w.duckdb", clock=clock, sleep=clock.sleep, lazy=60.0, stretch=1.0)
    files = _planned(wh.con, tmp_path)
    state = RunState(wh, "r1", clock=lambda: T0)
    r = Stages(step=direct, emit=lambda e: None)
    batch = Batch(
        r, state, kind="enrich", emit=lambda e: None, failed=lambda n, e: None, clock=clock
    )
    return clock, wh, batch, files


def _loaded_by_reader(path: Path) -> int:
    """A plain read-only connection's count of loaded chunks (it opens only while the writer
    has let go)."""
    with duckdb.connect(str(path), read_only=True) as reader:
        found = reader.execute("select count(*) from jobs where status = 'loaded'").fetchone()
    return int(found[0]) if found else 0


def _loaded_by_reader_after(wh: Writer) -> int:
    """The writer lets go, then a reader counts the loaded chunks."""
    wh.let_go()
    return _loaded_by_reader(wh.path)


def test_a_batch_due_late_in_a_stretch_is_loaded_at_the_next_stretch_s_start(
    tmp_path: Path,
) -> None:
    """A batch due (its file waited BATCH_WAIT) at a wait late in the writer's stretch is not
    loaded there: the writer lets go at that wait with the batch unloaded (a reader opens the
    file and finds nothing loaded), and the batch is loaded at the first wait of the next
    stretch, so readers are never kept out for a stretch and a load in one go."""
    clock, wh, batch, files = _stretched(tmp_path)
    batch.add(files[0])
    clock.now += BATCH_WAIT  # due, and the stretch has lasted past its second
    batch.before_wait(0.0)
    wh.waiting(0.0)
    assert batch.files and not wh.holding()
    assert _loaded_by_reader(wh.path) == 0  # the writer let go before any load
    clock.now += 0.05  # the answer, in moments
    wh.execute("select 1")  # recorded: a new stretch, after the rest of the readers' gap
    assert clock.slept == [pytest.approx(GAP - 0.05)] and wh.held_for() == 0.0
    batch.before_wait(0.0)
    assert not batch.files and wh.holding()
    assert _loaded_by_reader_after(wh) == 1
    wh.close()


def test_a_step_s_last_request_ends_the_writer_s_stretch(tmp_path: Path) -> None:
    """In a step whose writer has let go for readers before, a stretch of moments goes on at a
    request while requests are left; the last request's wait lets go of the file however short
    the stretch (a reader opens it), so that the step's last load and the run's end come in a
    stretch of their own, after the readers' gap. A step of moments (the writer never let go
    since the carry began: a run of a few places) keeps its stretch to its end."""
    clock, wh, batch, files = _stretched(tmp_path)
    batch.left(1)
    wh.waiting(0.0)
    assert wh.holding() and wh.stretch == 1.0  # a step of one request: no let-go for it
    clock.now += 1.0
    wh.waiting(0.0)  # a stretch's end: let go for readers, opened again after the gap
    clock.now += GAP + 0.01  # the request: longer than the readers' gap
    batch.add(files[0])
    batch.left(2)
    clock.now += 0.1
    batch.before_wait(0.0)
    wh.waiting(0.0)
    assert wh.holding() and batch.files  # not due: one file, just come
    batch.left(1)
    clock.now += 0.1
    batch.before_wait(0.0)
    wh.waiting(0.0)
    assert not wh.holding() and _loaded_by_reader(wh.path) == 0
    clock.now += 0.05  # the answer
    batch.flush()  # the step's end
    assert clock.slept == [pytest.approx(GAP - 0.05)] and _loaded_by_reader_after(wh) == 1
    wh.close()


def test_a_batch_of_batch_files_files_is_due_however_new(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files of a few rows each (a synchronous route's answers) are loaded at a wait once
    BATCH_FILES of them wait, however new, so that no load is of many files at once."""
    monkeypatch.setattr("placeflow.runner.batch.BATCH_FILES", 2)
    files = _planned(con, tmp_path)
    state = RunState(Writer.over(con), "r1", clock=lambda: T0)
    r = Stages(step=direct, emit=lambda e: None)
    batch = Batch(r, state, kind="enrich", emit=lambda e: None, failed=lambda n, e: None)
    batch.add(files[0])
    batch.before_wait(0.0)
    assert len(batch.files) == 1
    batch.add(files[1])
    batch.before_wait(0.0)
    assert not batch.files and len(r.stages["load"]) == 2


def test_the_run_s_account_ends_a_long_hold_at_its_request_when_the_carry_let_go_before(
    tmp_path: Path,
) -> None:
    """In `stretched` (the run's account), a wait on the service after the writer has held the
    file STRETCH lets go (a reader opens it) when the carry let go for readers before; a carry
    of moments (never let go) keeps its hold through it."""
    clock, wh, batch, _ = _stretched(tmp_path)
    wh.stretch = None  # the steps have ended
    with batch.stretched():
        clock.now += 2.0
        wh.waiting(0.0)
        assert wh.holding() and wh.stretch is None  # a carry of moments
    wh.let_go()
    wh.execute("select 1")  # opened again: the carry let go before
    with batch.stretched():
        clock.now += 2.0
        wh.waiting(0.0)  # the usage after, asked for
        assert not wh.holding() and _loaded_by_reader(wh.path) == 0
    assert wh.stretch is None
    wh.close()
