"""The job lifecycle table (`placeflow.state.lifecycle`) walked move by move against a real
warehouse: every listed move is made from every state it starts from, every state it does not
start from is refused with nothing written (tests/state/test_lifecycles.py: no code writes
`jobs` but through the table)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

from placeflow.errors import IllegalMove
from placeflow.state.lifecycle import HOLDS, MOVES, STATES, Move
from placeflow.state.runstate import RunState
from placeflow.store.warehouse import connect
from tests.warehouse.helpers import T0, add_run, plan_chunk

RUN = "run_lifecycle"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(tmp_path_factory.mktemp("lifecycle") / "wh.duckdb")
    yield con
    con.close()


@pytest.fixture
def con(warehouse: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """The module's warehouse with one run of its own for the test (its rows removed after)."""
    add_run(warehouse, RUN)
    yield warehouse
    for table in ("credit_ledger", "run_places", "jobs", "runs"):
        warehouse.execute(f"delete from {table} where run_id = ?", [RUN])


def _chunk_in(
    con: duckdb.DuckDBPyConnection, chunk_no: int, status: str, held: str | None = None
) -> None:
    plan_chunk(con, RUN, chunk_no, [f"pk{chunk_no}"], status=status)
    con.execute(
        "update jobs set error_code = ? where run_id = ? and chunk_no = ?", [held, RUN, chunk_no]
    )


def _row(con: duckdb.DuckDBPyConnection, chunk_no: int) -> tuple[Any, ...]:
    (row,) = con.execute(
        "select * exclude (run_id) from jobs where run_id = ? and chunk_no = ?", [RUN, chunk_no]
    ).fetchall()
    return tuple(row)


def _status(con: duckdb.DuckDBPyConnection, chunk_no: int) -> tuple[str, str | None]:
    ((status, code),) = con.execute(
        "select status, error_code from jobs where run_id = ? and chunk_no = ?", [RUN, chunk_no]
    ).fetchall()
    return str(status), code


CASES = [(move, start) for move in MOVES.values() for start in sorted(move.froms)]


@pytest.mark.parametrize(("move", "start"), CASES, ids=[f"{m.name}-from-{s}" for m, s in CASES])
def test_every_listed_move_is_made(con: duckdb.DuckDBPyConnection, move: Move, start: str) -> None:
    """Each move of the table, from each state it lists, leaves the chunk where it says."""
    held = sorted(move.held)[0] if move.held else None
    _chunk_in(con, 1, start, held)
    for to in sorted(move.to) or [None]:
        con.execute(
            "update jobs set status = ?, error_code = ? where run_id = ? and chunk_no = 1",
            [start, held, RUN],
        )
        RunState(con, RUN, clock=lambda: T0)._move(move.name, 1, to, error="noted")
        assert _status(con, 1)[0] == (to or start)


OFF_TABLE = [(move, start) for move in MOVES.values() for start in sorted(set(STATES) - move.froms)]


@pytest.mark.parametrize(
    ("move", "start"), OFF_TABLE, ids=[f"{m.name}-from-{s}" for m, s in OFF_TABLE]
)
def test_a_move_the_table_does_not_list_is_refused(
    con: duckdb.DuckDBPyConnection, move: Move, start: str
) -> None:
    """From a state the move does not start from, it raises IllegalMove and writes nothing."""
    held = sorted(move.held)[0] if move.held else None
    _chunk_in(con, 1, start, held)
    before = _row(con, 1)
    to = sorted(move.to)[0] if move.to else None
    with pytest.raises(IllegalMove, match=f"no move {move.name} from where it is {start}"):
        RunState(con, RUN, clock=lambda: T0)._move(move.name, 1, to, error="noted")
    assert _row(con, 1) == before


@pytest.mark.parametrize("name", sorted(n for n, m in MOVES.items() if m.held))
def test_a_held_only_move_refuses_a_chunk_not_so_held(
    con: duckdb.DuckDBPyConnection, name: str
) -> None:
    """resend_held takes back only chunks held as unknown or without a file: an uncertain
    chunk, or one not held at all, is refused."""
    move = MOVES[name]
    start = sorted(move.froms)[0]
    for chunk_no, code in enumerate([None, *sorted(set(HOLDS) - move.held)], start=1):
        _chunk_in(con, chunk_no, start, code)
        with pytest.raises(IllegalMove, match="held"):
            RunState(con, RUN, clock=lambda: T0)._move(name, chunk_no)
        assert _status(con, chunk_no) == (start, code)


def test_a_target_the_move_does_not_list_is_refused(con: duckdb.DuckDBPyConnection) -> None:
    """`ended` moves to completed or cancelled only: asked to move to loaded, nothing moves."""
    _chunk_in(con, 1, "submitted")
    with pytest.raises(IllegalMove, match="not to loaded"):
        RunState(con, RUN, clock=lambda: T0)._move("ended", 1, "loaded")
    assert _status(con, 1) == ("submitted", None)


def test_the_public_moves_go_through_the_table(con: duckdb.DuckDBPyConnection) -> None:
    """The RunState methods refuse as the table does: a loaded chunk cannot be submitted,
    timed out, resent or ended; a planned one cannot be loaded."""
    _chunk_in(con, 1, "loaded")
    state = RunState(con, RUN, clock=lambda: T0)
    for call in (
        lambda: state.submitted(1, batch_id="b", rows=1),
        lambda: state.timed_out(1, "late"),
        lambda: state.stuck(1, "still"),
        lambda: state.ended(1, "completed"),
        lambda: state.unknown_job(1, "gone"),
    ):
        with pytest.raises(IllegalMove):
            call()
    _chunk_in(con, 2, "planned")
    with pytest.raises(IllegalMove):
        state.settled(2, ref="r", rows=1, charged=1, released=0, notes=("a", "b"), path="p",
                      short=None, at=T0)  # fmt: skip
    assert _status(con, 1) == ("loaded", None)
    assert _status(con, 2) == ("planned", None)
    charges = "select count(*) from credit_ledger where kind = 'charge' and run_id = ?"
    assert con.execute(charges, [RUN]).fetchall() == [(0,)]


def test_every_state_is_reachable_and_described() -> None:
    """Every status a move leaves or starts from is a described state, and every state but
    planned (where `open` records a chunk) is the target of some move."""
    named = set(STATES)
    assert all(m.froms <= named and m.to <= named for m in MOVES.values())
    reached = {"planned"} | {t for m in MOVES.values() for t in m.to}
    assert reached == named
