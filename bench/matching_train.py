"""Estimate the fuzzy matching model once, with EM, and keep it in the repository.

Data: a set built by bench/matching_eval.py with a seed of its own (not the evaluation seed).
u comes from random pairs; m from the set's entity labels (Splink's estimate_m_from_label_column).
EM was tried first (four blocking passes) and rejected: unsupervised, it took a chain's branches
for one class with the duplicates (m of "street numbers differ" came out 0.63), so the labels
of the generated set are the better estimate. A level gets floors M_FLOOR and U_FLOOR,
and the website comparison (absent from the generated data) the priors of WEBSITE_PRIORS.
Writes src/placeflow/pipeline/match/model.json; runs then load it (deterministic, no training).

    python3 -m uv run --frozen python bench/matching_train.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # placeflow, not installed
sys.path.insert(0, str(Path(__file__).resolve().parent))  # matching_eval, beside this script

from matching_eval import _normalised, build
from splink import DuckDBAPI, Linker

from placeflow.pipeline.match.features import features
from placeflow.pipeline.match.model import MODEL_PATH, untrained_settings

ROOT = Path(__file__).resolve().parent.parent
M_FLOOR, U_FLOOR = 0.01, 1e-4
"""Least m and u of a level: the generated set never shows some differences real data has
(a street written "w pico" in one guide and "pico" in the other), so no level is ruled out."""
WEBSITE_PRIORS = {True: (0.9, 0.001), False: (0.1, 0.999)}
"""(m, u) of website hosts equal / different: set by hand (no generated place has a website)."""
PRIOR = 1e-5
"""Probability that two random places match, kept fixed: with one row per exact key, a place
has a duplicate in a small share of inputs, among millions of possible pairs."""


NAME_DIFFERENT_FLOOR = 0.001
"""Least m of "names differ": kept low, since two businesses of one hotel share its address and
phone (the Fodor's guide lists several), so only the name tells them apart."""


def _names_differ(comparison: dict[str, Any], level: dict[str, Any]) -> bool:
    label = str(level["label_for_charts"])
    return comparison["output_column_name"] == "name" and (
        label.startswith("All other") or "name_sorted >= 0.75" in label
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--airports", type=int, default=4000)
    args = p.parse_args(argv)
    records = build(args.seed, args.airports)
    places = _normalised(records, phone=True)
    unique = places.sort("row_ord").unique("place_key", keep="first", maintain_order=True)
    entity = unique.join(records.select("row_ord", "entity"), on="row_ord", how="left")
    feats = features(unique).with_columns(entity.get_column("entity"))
    con = duckdb.connect(":memory:")
    db_api = DuckDBAPI(con)
    table = db_api.register(feats.to_arrow(), table_name="train_places")
    linker = Linker(table, untrained_settings(), log_level=None)
    linker.training.estimate_u_using_random_sampling(max_pairs=2e6, seed=args.seed)
    linker.training.estimate_m_from_label_column("entity")
    model = linker.misc.save_model_to_json()
    for comparison in model["comparisons"]:
        for level in comparison["comparison_levels"]:
            if level.get("is_null_level"):
                continue
            if comparison["output_column_name"] == "website":
                exact = level["label_for_charts"].startswith("Exact")
                level["m_probability"], level["u_probability"] = WEBSITE_PRIORS[exact]
            floor = NAME_DIFFERENT_FLOOR if _names_differ(comparison, level) else M_FLOOR
            level["m_probability"] = max(level.get("m_probability") or 0.0, floor)
            level["u_probability"] = max(level.get("u_probability") or 0.0, U_FLOOR)
    model["probability_two_random_records_match"] = PRIOR
    model.pop("linker_uid", None)
    MODEL_PATH.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
    for comparison in model["comparisons"]:
        for level in comparison["comparison_levels"]:
            m, u = level.get("m_probability"), level.get("u_probability")
            print(f"{comparison['output_column_name']:14} {level['label_for_charts'][:50]:50} "
                  f"m={m} u={u}")  # fmt: skip
    print(f"wrote {MODEL_PATH.relative_to(ROOT)} from {feats.height} places")
    con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
