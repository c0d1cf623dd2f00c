"""Writing the matching figures into their own sections of bench/RESULTS.md (between markers)."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def replace_section(path: Path, name: str, body: str) -> None:
    """Put `body` between this section's markers, replacing an earlier version or appending."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else text.rstrip() + "\n\n" + block
    )
    path.write_text(text, encoding="utf-8")


def write_eval_section(
    path: Path,
    *,
    args: argparse.Namespace,
    records: Any,
    results: dict[bool, dict[str, Any]],
    restaurants: dict[str, int],
) -> None:
    roles = dict(records.group_by("role").len().iter_rows())
    kinds = dict(records.group_by("kind").len().iter_rows())
    lines = [
        "# Fuzzy matching: labelled evaluation",
        "",
        f"- command: `python3 -m uv run --frozen python bench/matching_eval.py --seed {args.seed}"
        f" --airports {args.airports}`; date {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"- set: {records.height:,} records ({roles.get('original', 0):,} originals,"
        f" {roles.get('duplicate', 0):,} perturbed duplicates, {roles.get('near_miss', 0):,}"
        f" near-misses; {kinds.get('restaurant', 0):,} restaurant and {kinds.get('airport', 0):,}"
        " airport records), built by bench/matching_eval.py (its docstring lists the"
        " perturbations and near-misses); model trained on seed 1, evaluated on this seed",
        f"- threshold: match probability >= {args.threshold}; pairs of records, exact place_key"
        " and fuzzy clusters together",
        "",
        "| inputs | mode | predicted pairs | correct | precision | recall |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for phone, r in results.items():
        label = (
            "with phone (a run reads a phone column)" if phone
            else "place fields only (a file without phone or website)"
        )  # fmt: skip
        for mode in ("exact", "fuzzy"):
            m = r[mode]
            lines.append(f"| {label} | {mode} | {m['predicted']:,} | {m['correct']:,} |"
                         f" {m['precision']:.4f} | {m['recall']:.4f} |")  # fmt: skip
    lines += [
        "",
        f"True pairs: {results[False]['true_pairs']:,}. Targets (fuzzy): precision >= 0.995 and"
        " recall >= 0.9.",
        "",
        "## Fuzzy matching: the two restaurant guides (fodors + zagat, labels not held)",
        "",
        f"{restaurants['rows']} rows; exact place_key pairs: {restaurants['exact_pairs']};"
        f" fuzzy pairs with phone: {restaurants['pairs_with_phone']}"
        f" ({restaurants['cross_guide_pairs_with_phone']} across the guides); place fields only:"
        f" {restaurants['pairs_without_phone']}"
        f" ({restaurants['cross_guide_pairs_without_phone']} across). The pairs (with phone) are in"
        " bench/work/restaurant_matches.csv for a person to look at.",
    ]
    replace_section(path, "matching-eval", "\n".join(lines))
