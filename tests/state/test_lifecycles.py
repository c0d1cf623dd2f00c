"""The research request and run lifecycles (`placeflow.state.lifecycle.REQUESTS`, `RUNS`) walked
as the job lifecycle is: every listed move is made from every state it starts from, every other
state is refused with nothing written; each table equals its column's CHECK in the warehouse,
names as `who` modules that make the move, and no code moves those columns but through it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.errors import IllegalMove
from placeflow.state.lifecycle import MACHINES, REQUESTS, RUNS, Machine, Move, move
from placeflow.state.runbook import RunBook
from placeflow.store.warehouse import connect
from tests.warehouse.helpers import T0, add_run

SRC = Path(__file__).resolve().parents[2] / "src"
RUN = "rr_lifecycle"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(tmp_path_factory.mktemp("lifecycles") / "wh.duckdb")
    yield con
    con.close()


@pytest.fixture
def con(warehouse: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """The module's warehouse with one research run of its own (its rows removed after)."""
    add_run(warehouse, RUN)
    yield warehouse
    for table in ("research_requests", "runs"):
        warehouse.execute(f"delete from {table} where run_id = ?", [RUN])


def _in(con: duckdb.DuckDBPyConnection, machine: Machine, state: str) -> tuple[Any, ...]:
    """The row the test moves, put in `state`: the run itself, or its request 0."""
    if machine is RUNS:
        con.execute("update runs set status = ? where run_id = ?", [state, RUN])
        return (RUN,)
    con.execute("delete from research_requests where run_id = ?", [RUN])
    con.execute(
        "insert into research_requests (run_id, request_no, places, body, body_sha256,"
        " credits_max, state, planned_at) values (?, 0, 1, '{}', 'x', 4, ?, ?)",
        [RUN, state, T0],
    )
    return (RUN, 0)


def _row(con: duckdb.DuckDBPyConnection, machine: Machine) -> tuple[Any, ...]:
    (row,) = con.execute(
        f"select * from {machine.table} where run_id = ?"
        + (" and request_no = 0" if machine is REQUESTS else ""),
        [RUN],
    ).fetchall()
    return tuple(row)


def _state(con: duckdb.DuckDBPyConnection, machine: Machine) -> str:
    return str(_row(con, machine)[_columns(con, machine).index(machine.column)])


def _columns(con: duckdb.DuckDBPyConnection, machine: Machine) -> list[str]:
    rows = con.execute(
        "select column_name from duckdb_columns() where table_name = ? order by column_index",
        [machine.table],
    ).fetchall()
    return [str(r[0]) for r in rows]


WALKED = (REQUESTS, RUNS)
CASES = [(m, mv, s) for m in WALKED for mv in m.moves.values() for s in sorted(mv.froms)]
OFF = [
    (m, mv, s) for m in WALKED for mv in m.moves.values() for s in sorted(set(m.states) - mv.froms)
]


def _id(case: tuple[Machine, Move, str]) -> str:
    return f"{case[0].table}-{case[1].name}-from-{case[2]}"


@pytest.mark.parametrize(("machine", "step", "start"), CASES, ids=[_id(c) for c in CASES])
def test_every_listed_move_is_made(
    con: duckdb.DuckDBPyConnection, machine: Machine, step: Move, start: str
) -> None:
    """Each move of the request and run tables, from each state it lists, leaves the row where
    it says, with the values it was given."""
    for to in sorted(step.to):
        key = _in(con, machine, start)
        noted = {"error": "noted"} if machine is REQUESTS else {"message": "noted"}
        move(con, machine, step.name, key, to, **noted)
        assert _state(con, machine) == to
        assert "noted" in _row(con, machine)


@pytest.mark.parametrize(("machine", "step", "start"), OFF, ids=[_id(c) for c in OFF])
def test_a_move_the_table_does_not_list_is_refused(
    con: duckdb.DuckDBPyConnection, machine: Machine, step: Move, start: str
) -> None:
    """From a state the move does not start from, it raises IllegalMove and writes nothing."""
    key = _in(con, machine, start)
    before = _row(con, machine)
    with pytest.raises(IllegalMove, match=f"no move {step.name} from where it is {start}"):
        move(con, machine, step.name, key, sorted(step.to)[0])
    assert _row(con, machine) == before


def test_a_run_is_recorded_only_as_it_may_open_and_its_status_moves_only_by_the_table(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """RunBook records a run planned, running or refused only; `update` will not set a status;
    `moved` refuses closing a refused run, and nothing of it is written."""
    book = RunBook(con, "rr_other", clock=lambda: T0)
    with pytest.raises(IllegalMove, match="recorded"):
        book.record({"created_at": T0, "status": "completed", "mode": "research", "signature": "s"})
    assert con.execute("select count(*) from runs where run_id = 'rr_other'").fetchall() == [(0,)]
    run = RunBook(con, RUN, clock=lambda: T0)
    with pytest.raises(IllegalMove, match="lifecycle only"):
        run.update(status="completed")
    _in(con, RUNS, "refused")
    before = _row(con, RUNS)
    with pytest.raises(IllegalMove, match="no move closed"):
        run.closed(status="completed", succeeded=1, failed=0, usage_after=9, message="m")
    assert _row(con, RUNS) == before


@pytest.mark.parametrize("machine", MACHINES, ids=[m.table for m in MACHINES])
def test_each_table_is_the_warehouse_check_and_reaches_every_state(
    warehouse: duckdb.DuckDBPyConnection, machine: Machine
) -> None:
    """The states a table lists are exactly those its column's CHECK allows (one list, kept
    equal), every move starts and ends among them, and each is reached or recorded."""
    checks = warehouse.execute(
        "select expression from duckdb_constraints() where table_name = ?"
        " and constraint_type = 'CHECK' and expression like ?",
        [machine.table, f"%{machine.column} IN %"],
    ).fetchall()
    (expression,) = [str(c[0]) for c in checks]
    assert set(re.findall(r"'([a-z_]+)'", expression)) == set(machine.states)
    named = set(machine.states)
    assert all(m.froms <= named and m.to <= named for m in machine.moves.values())
    recorded = {"planned", "running", "refused"} if machine is RUNS else {"planned"}
    assert recorded | {t for m in machine.moves.values() for t in m.to} == named


WHO = [(m, mv) for m in MACHINES for mv in m.moves.values()]


@pytest.mark.parametrize(("machine", "step"), WHO, ids=[f"{m.table}-{s.name}" for m, s in WHO])
def test_who_names_the_modules_that_make_the_move(machine: Machine, step: Move) -> None:
    """Each module a move's `who` names exists and makes that move (calls it by name)."""
    n = step.name
    calls = {
        "jobs": rf"\.{n}(_all)?\(",  # settled_all: a batch of chunks settled at once
        "research_requests": rf"""(_move\(\s*ctx,\s*"{n}"|REQUESTS,\s*"{n}")""",
        "runs": rf"""(\.moved\(\s*"{n}"|\.{n}\(|RUNS,\s*"{n}"|ends = .*"{n}")""",
    }[machine.table]
    for who in (w.strip() for w in step.who.split(",")):
        path = SRC / "placeflow" / (who.replace(".", "/") + ".py")
        assert path.exists(), f"{step.name}: {who} is no module"
        assert re.search(calls, path.read_text()), f"{who} does not make {step.name}"


def test_only_the_lifecycle_moves_a_state() -> None:
    """No statement of the source or its SQL updates jobs or research_requests, or sets
    runs.status, but the lifecycle's one guarded statement (an insert records a row; every
    later move is the table's)."""
    moves = re.compile(
        r"update\s+(jobs|research_requests)\b|update\s+runs\s+set\s[^;]*?\bstatus\s*=", re.I
    )
    found = sorted(
        str(path.relative_to(SRC.parent))
        for path in [*SRC.rglob("*.py"), *SRC.parent.joinpath("sql").rglob("*.sql")]
        if "emulator" not in path.parts and moves.search(path.read_text())
    )
    assert found == [], found
