"""The README's promises: its two commands, CI running the test one, every command documented."""

from __future__ import annotations

import re
from pathlib import Path

from placeflow.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def readme_commands() -> list[str]:
    """The commands in the README's 'The two commands' block."""
    section = README.split("## The two commands", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_has_exactly_two_commands() -> None:
    """The README gives exactly two commands: the main job and the test suite."""
    commands = readme_commands()
    assert len(commands) == 2
    assert commands[1].endswith("pytest")


LINTS = (
    "python3 -m uv run --frozen ruff check",
    "python3 -m uv run --frozen ruff format --check",
    "python3 -m uv run --frozen mypy",
)
"""The checks CI runs before the tests, each from the locked environment."""


def ci_steps() -> list[str]:
    """The commands of .ci/run, in order (its comments, `set` and `cd` aside)."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line for line in ci if line and not line.startswith(("#", "set ", "cd "))]


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run installs the system packages the tests start, then runs the README's test
    command as its last step, exactly as the README gives it."""
    steps = ci_steps()
    assert steps[-1] == readme_commands()[1]
    assert steps.count(readme_commands()[1]) == 1
    assert "bash .ci/system-packages" in steps[:-1]


def test_ci_lints_and_type_checks_before_the_tests() -> None:
    """ruff check, ruff format --check and mypy each run in .ci/run before the tests, after uv
    is installed, so a lint or type error fails CI before pytest starts."""
    steps = ci_steps()
    tests = steps.index(readme_commands()[1])
    uv = steps.index("python3 -m pip install --quiet uv")
    assert all(uv < steps.index(lint) < tests for lint in LINTS)


def test_every_cli_command_is_in_the_readme_and_has_help() -> None:
    """Each `placeflow` subcommand has help text and appears in the README."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices = getattr(sub, "choices", {})
    assert choices
    for name, command in choices.items():
        assert command.description or command.format_help()
        assert re.search(rf"placeflow {name}\b", README), f"`placeflow {name}` not in README"


def test_every_warehouse_column_is_documented_in_the_readme() -> None:
    """Each table and view of the warehouse, and each of its columns, appears in the README."""
    from placeflow.warehouse import connect

    con = connect(":memory:")
    try:
        columns = con.execute(
            "select c.table_name, c.column_name from duckdb_columns() c"
            " join (select table_name as name from duckdb_tables() where not internal"
            "       union all select view_name from duckdb_views() where not internal) t"
            " on t.name = c.table_name where c.table_name != 'schema_migrations'"
        ).fetchall()
    finally:
        con.close()
    assert columns
    for table, column in columns:
        assert f"### `{table}`" in README, f"table {table} not documented"
        assert f"| `{column}` |" in README, f"column {table}.{column} not documented"


def test_readme_python_example_runs_on_the_pinned_duckdb(tmp_path: Path) -> None:
    """The README's 'From Python' warehouse example runs as written against a real warehouse
    (duckdb 2.0 dropped `fetchone()` on relations and `pl()` on execute results)."""
    from placeflow.warehouse import connect

    block = README.split("From Python", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    code = "\n".join(line[2:] if line.startswith("  ") else line for line in block.splitlines())
    db = tmp_path / "placeflow.duckdb"
    connect(db).close()  # migrations and views, no runs: the example's queries return 0 rows
    assert "data/placeflow.duckdb" in code
    scope: dict[str, object] = {"run_id": "r1"}
    exec(compile(code.replace("data/placeflow.duckdb", str(db)), "README", "exec"), scope)
    assert scope["con"] is not None
