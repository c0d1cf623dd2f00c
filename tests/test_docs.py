"""The docs' promises: the README's two commands and tour, CI, and docs/ true to the code."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from placeflow.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CLI_DOC = (ROOT / "docs" / "cli.md").read_text()
WAREHOUSE_DOC = (ROOT / "docs" / "warehouse.md").read_text()
EXPORTS_DOC = (ROOT / "docs" / "exports.md").read_text()
TOUR = ("run", "runs", "rows", "report", "resume", "refresh", "export", "research")
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def gen_docs() -> ModuleType:
    """scripts/gen_docs.py, the generator of docs/cli.md's and docs/warehouse.md's blocks."""
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = module
    spec.loader.exec_module(module)
    return module


GEN = gen_docs()


def readme_commands() -> list[str]:
    """The commands in the README's 'The two commands' block."""
    section = README.split("## The two commands", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def subcommands() -> dict[str, object]:
    """Each `placeflow` subcommand's parser, by name."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices: dict[str, object] = dict(getattr(sub, "choices", {}))
    assert choices
    return choices


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a document's headings (fenced blocks hold none)."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", markdown).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


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


def test_readme_is_at_most_400_lines() -> None:
    """The README stays an entry point of at most 400 lines; the reference lives in docs/."""
    assert len(README.splitlines()) <= 400


def test_readme_tour_names_the_main_commands() -> None:
    """The README's tour gives each main command a step of its own, in the order of use."""
    tour = README.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    found = [re.search(rf"^\d+\. `placeflow {name}[ `]", tour, re.M) for name in TOUR]
    missing = [name for name, match in zip(TOUR, found, strict=True) if match is None]
    assert not missing, f"not in the tour: {missing}"
    at = [match.start() for match in found if match is not None]
    assert at == sorted(at)


def test_every_cli_command_has_a_section_with_its_help_in_docs_cli() -> None:
    """Each `placeflow` subcommand has help text, a section in docs/cli.md and its usage block."""
    choices = subcommands()
    for name, command in choices.items():
        assert getattr(command, "description", None), f"`placeflow {name}` has no description"
        assert f"\n## placeflow {name}\n" in CLI_DOC, f"`placeflow {name}` has no section"
    assert sorted(GEN.blocks(CLI_DOC, "help")) == sorted(["", *choices])


def test_cli_doc_usage_blocks_are_the_help_output() -> None:
    """Every usage block of docs/cli.md is what `placeflow COMMAND --help` prints today."""
    assert GEN.regenerate(CLI_DOC) == CLI_DOC, "stale: run scripts/gen_docs.py"


def test_warehouse_doc_has_a_block_for_every_table_and_view() -> None:
    """docs/warehouse.md has one generated block for each table and view of the warehouse."""
    blocks = GEN.blocks(WAREHOUSE_DOC, "table")
    assert len(blocks) == len(set(blocks))
    assert sorted(blocks) == sorted(GEN.relations())


def test_warehouse_doc_tables_are_the_schema_comments() -> None:
    """Every table of docs/warehouse.md is what the schema's comments and columns say today."""
    assert GEN.regenerate(WAREHOUSE_DOC) == WAREHOUSE_DOC, "stale: run scripts/gen_docs.py"


def test_schema_snapshot_is_what_the_migrations_make() -> None:
    """sql/current_schema.sql is every table as a fresh warehouse has it (regenerated by
    scripts/gen_docs.py), so any table reads in one place."""
    snapshot = ROOT / "sql" / "current_schema.sql"
    assert snapshot.read_text(encoding="utf-8") == GEN.schema_snapshot(), (
        "stale: run scripts/gen_docs.py"
    )
    assert "create table run_rows (" in snapshot.read_text(encoding="utf-8")


def test_every_warehouse_column_is_documented() -> None:
    """Each table and view of the warehouse, and each of its columns, is in docs/warehouse.md."""
    relations = GEN.relations()
    assert relations
    for name, relation in relations.items():
        assert relation.comment, f"{name} has no comment"
        assert f"### `{name}` ({relation.kind})" in WAREHOUSE_DOC, f"{name} not documented"
        for column, _, comment in relation.columns:
            assert comment, f"{name}.{column} has no comment"
            assert f"| `{column}` |" in WAREHOUSE_DOC, f"{name}.{column} not documented"


def test_exports_doc_has_every_exported_table_as_exported_today() -> None:
    """docs/exports.md has one generated block per table placeflow exports, each what the
    schema's comments, the table's key and incremental column and the type mapping say."""
    from placeflow.exporters.export import TABLES

    assert sorted(GEN.blocks(EXPORTS_DOC, "export")) == sorted(TABLES)
    assert GEN.regenerate(EXPORTS_DOC) == EXPORTS_DOC, "stale: run scripts/gen_docs.py"


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    """Every relative link of README.md and docs/*.md names a file (and heading) that exists."""
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for doc in documents:
        text = doc.read_text()
        for target in LINK.findall(FENCE.sub("", text)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, file:
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.name}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken


def test_warehouse_doc_python_example_runs_on_the_pinned_duckdb(tmp_path: Path) -> None:
    """docs/warehouse.md's 'From Python' example runs as written on the pinned duckdb (2.0)."""
    from placeflow.store.warehouse import connect

    code = WAREHOUSE_DOC.split("### From Python", 1)[1].split("```python", 1)[1].split("```")[0]
    db = tmp_path / "placeflow.duckdb"
    connect(db).close()  # migrations and views, no runs: the example's queries return 0 rows
    assert "data/placeflow.duckdb" in code
    scope: dict[str, object] = {"run_id": "r1"}
    exec(compile(code.replace("data/placeflow.duckdb", str(db)), "warehouse.md", "exec"), scope)
    assert scope["con"] is not None
