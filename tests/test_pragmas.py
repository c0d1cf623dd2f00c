"""Every `# noqa` and `# type: ignore` says why, beside it.

    # noqa: S608 - our column names
    # type: ignore[arg-type]  # why

A silenced check without its reason cannot be judged later (is it still needed? was it ever?),
so src/, tests/ and bench/ carry none: the reason follows the codes, after ` - ` for noqa and
after `  # ` for type: ignore (the form mypy reads).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "tests", "bench")

PRAGMA = re.compile(
    r"#\s*(?:(?P<noqa>noqa)\b(?::\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?"
    r"|(?P<ignore>type:\s*ignore)(?:\[[a-z0-9_,\s-]*\])?)"
)
REASON = {"noqa": re.compile(r"\s+(?:-|#)\s*\w"), "ignore": re.compile(r"\s*#\s*\w")}


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each noqa or type: ignore in `source`'s comments with no reason after
    its codes (strings and docstrings that mention them are not comments)."""
    found: list[tuple[int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        comment = token.string
        pragmas = list(PRAGMA.finditer(comment))
        for i, match in enumerate(pragmas):
            end = pragmas[i + 1].start() if i + 1 < len(pragmas) else len(comment)
            kind = "noqa" if match.group("noqa") else "ignore"
            if not REASON[kind].match(comment[match.end() : end]):
                found.append((token.start[0], comment))
    return found


def test_every_noqa_and_type_ignore_has_a_reason() -> None:
    """No `# noqa` or `# type: ignore` in src/, tests/ or bench/ without its reason."""
    paths = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(paths) > 200  # the walk found the tree
    bare = [
        f"{path.relative_to(ROOT)}:{line}: {comment}"
        for path in paths
        for line, comment in unexplained(path.read_text(encoding="utf-8"))
    ]
    assert bare == []


def test_the_scan_tells_a_reason_from_none() -> None:
    """Codes alone are flagged; a reason after them passes; strings are not comments."""
    source = (
        "a = 1  # noqa: S608\n"
        "b = 2  # noqa: S608 - our names\n"
        "c = 3  # type: ignore[arg-type]\n"
        "d = 4  # type: ignore[arg-type]  # a str here\n"
        "e = 5  # noqa\n"
        "f = 6  # noqa: E501, S608 - long, and our names\n"
        "g = 7  # type: ignore\n"
        "h = '# noqa: S608'\n"
        "i = 8  # noqa: E501  # type: ignore[misc]\n"
    )
    assert [line for line, _ in unexplained(source)] == [1, 3, 5, 7, 9, 9]
