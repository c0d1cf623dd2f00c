"""Labelled evaluation of the fuzzy matching pass, built from real places by perturbation.

Bases (real): the Fodor's guide of data/samples (restaurants: name, street, city, phone; each
given a made-up ZIP code per city, some with leading zeros, and country US) and a seeded sample
of the airports of the installed `airportsdata` package (name, city, region, country,
coordinates). Every base is one entity; the set holds its original record and, for a share of
them, one or two perturbed duplicates (same entity) and near-misses (different entities):

- duplicates: name case, accents (cafe/café), "&"/"and", one typo, a branch suffix added
  ("- Downtown", "(Airport)", "#12"), "the" dropped; street abbreviations switched (Street/St,
  Boulevard/Blvd, Avenue/Ave, North/N), a suite line appended or put first; phone formats;
  ZIP leading zeros dropped or ZIP+4; coordinates moved up to 30 m or dropped; city dropped or
  upper-cased; "International" written "Intl".
- near-misses: a chain's other branch on the same street (same name, another number, another
  phone), the same name in another city (restaurants) or another country far away (airports).

Precision and recall are over pairs of records: a pair is predicted when the exact place_key or
the fuzzy pass puts both records in one cluster, true when both come from one entity.

It then scores dedupe on real data (bench/matching_real.py: seven public directories with their
own ids, and the two restaurant guides with their labels) and runs the guides one file at a
time against one run through the sandbox (bench/matching_runs.py), and writes both sections of
bench/RESULTS.md.

    .venv/bin/python bench/matching_eval.py [--no-runs]
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time
import unicodedata
from itertools import combinations
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # placeflow, not installed
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench/ siblings

from placeflow.pipeline.match import DEFAULT_THRESHOLD, fuzzy_match
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.placekey import place_keys

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
STREET_SWAPS = [
    ("street", "st"),
    ("boulevard", "blvd"),
    ("avenue", "ave"),
    ("road", "rd"),
    ("north", "n"),
    ("south", "s"),
    ("west", "w"),
    ("east", "e"),
    ("drive", "dr"),
]
BRANCHES = [" - Downtown", " (Airport)", " #12", " - Midtown", " (Union Square)"]
ACCENTS = {"cafe": "café", "creme": "crème", "jose": "josé", "senor": "señor"}


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _typo(rng: random.Random, text: str) -> str:
    spots = [i for i in range(1, len(text) - 1) if text[i].isalpha() and text[i + 1].isalpha()]
    if len(text) < 8 or not spots:
        return text
    i = rng.choice(spots)
    kind = rng.randrange(3)
    if kind == 0:
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    if kind == 1:
        return text[:i] + text[i + 1 :]
    return text[:i] + text[i] + text[i:]


def _swap_words(rng: random.Random, street: str) -> str:
    words = street.replace(".", "").split(" ")
    out = []
    for w in words:
        low = w.lower()
        for long, short in STREET_SWAPS:
            if low == long:
                w = short.title() if rng.random() < 0.5 else short
            elif low == short:
                w = long.title()
        out.append(w)
    return " ".join(out)


def _phone(rng: random.Random, digits: str) -> str:
    d = "".join(c for c in digits if c.isdigit())[-10:]
    if len(d) < 10:
        return digits
    forms = [
        f"({d[:3]}) {d[3:6]}-{d[6:]}",
        f"{d[:3]}.{d[3:6]}.{d[6:]}",
        f"+1 {d[:3]} {d[3:6]} {d[6:]}",
        f"{d[:3]}-{d[3:6]}-{d[6:]}",
    ]
    return rng.choice(forms)


def restaurant_bases(rng: random.Random) -> list[dict[str, Any]]:
    """The Fodor's guide, each with a ZIP per city (some starting with 0) and country US."""
    path = SAMPLES / "restaurants_fodors.csv"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    zips: dict[str, str] = {}
    out = []
    for r in rows:
        city = r["city"].strip()
        zips.setdefault(city, f"{rng.randrange(0, 99999):05d}")
        out.append({"name": r["name"], "street": r["addr"], "city": city, "region": None,
                    "postcode": zips[city], "country": "US", "latitude": None,
                    "longitude": None, "phone": r["phone"], "kind": "restaurant"})  # fmt: skip
    return out


def airport_bases(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """A seeded sample of real airports (name, city, region, country, coordinates)."""
    import airportsdata  # type: ignore[import-untyped]  # dev dependency, untyped

    airports = sorted(airportsdata.load().values(), key=lambda a: a["icao"])
    picked = rng.sample(airports, min(n, len(airports)))
    return [{"name": a["name"], "street": None, "city": a["city"] or None, "region": a["subd"],
             "postcode": None, "country": a["country"], "latitude": float(a["lat"]),
             "longitude": float(a["lon"]), "phone": None, "kind": "airport"}
            for a in picked]  # fmt: skip


def duplicate(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    """The same place written differently (two to four perturbations)."""
    d = dict(base)
    ops = rng.sample(range(10), rng.randint(2, 4))
    for op in ops:
        if op == 0:
            d["name"] = rng.choice([d["name"].upper(), d["name"].title(), d["name"].lower()])
        elif op == 1:
            name = d["name"]
            for plain, accented in ACCENTS.items():
                name = name.replace(plain, accented) if plain in name else name
            d["name"] = _fold(name) if name == d["name"] else name
            d["name"] = (
                d["name"].replace(" and ", " & ")
                if " and " in d["name"]
                else d["name"].replace(" & ", " and ")
            )
        elif op == 2:
            d["name"] = _typo(rng, d["name"])
        elif op == 3:
            d["name"] = d["name"] + rng.choice(BRANCHES)
        elif op == 4:
            d["name"] = d["name"].replace("International", "Intl").replace("the ", "", 1)
        elif op == 5 and d["street"]:
            d["street"] = _swap_words(rng, d["street"])
        elif op == 6 and d["street"]:
            suite = f"Suite {rng.randrange(100, 900)}"
            d["street"] = (
                f"{suite}, {d['street']}" if rng.random() < 0.5 else f"{d['street']} {suite}"
            )
        elif op == 7:
            if d["phone"]:
                d["phone"] = _phone(rng, d["phone"])
            if d["postcode"]:
                d["postcode"] = rng.choice(
                    [d["postcode"].lstrip("0") or "0", d["postcode"] + "-1234"]
                )
        elif op == 8 and d["latitude"] is not None:
            if rng.random() < 0.3:
                d["latitude"] = d["longitude"] = None
            else:
                d["latitude"] += rng.uniform(-0.00025, 0.00025)
                d["longitude"] += rng.uniform(-0.00025, 0.00025)
        elif op == 9 and d["city"]:
            d["city"] = None if rng.random() < 0.3 else d["city"].upper()
    return d


def near_miss(rng: random.Random, base: dict[str, Any], cities: list[str]) -> dict[str, Any] | None:
    """Another place that looks like this one: a branch on the same street, or a namesake."""
    d = dict(base)
    if base["kind"] == "restaurant":
        street = base["street"] or ""
        head, _, rest = street.partition(" ")
        if head.isdigit() and rng.random() < 0.6:
            d["street"] = f"{int(head) + rng.randrange(2, 400, 2)} {rest}"
            d["phone"] = (
                f"{rng.randrange(200, 999)}-{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}"
            )
            return d
        d["city"] = rng.choice([c for c in cities if c != base["city"]])
        d["postcode"] = f"{rng.randrange(0, 99999):05d}"
        d["phone"] = None
        return d
    if base["latitude"] is None:
        return None
    d["country"] = rng.choice(["GB", "FR", "DE", "BR", "IN", "AU", "CA", "JP"])
    if d["country"] == base["country"]:
        return None
    d["latitude"] = (base["latitude"] + rng.uniform(5, 20)) % 80
    d["longitude"] = base["longitude"] + rng.uniform(5, 20)
    d["city"] = rng.choice(cities)
    return d


def build(seed: int, airports: int = 1500) -> pl.DataFrame:
    """The labelled records: entity id, kind (original/duplicate/near_miss) and the fields."""
    rng = random.Random(seed)
    bases = restaurant_bases(rng) + airport_bases(rng, airports)
    cities = sorted({b["city"] for b in bases if b["city"] and b["kind"] == "restaurant"})
    records: list[dict[str, Any]] = []
    for entity, base in enumerate(bases):
        records.append({**base, "entity": entity, "role": "original"})
        if rng.random() < 0.6:
            for _ in range(1 if rng.random() < 0.8 else 2):
                records.append({**duplicate(rng, base), "entity": entity, "role": "duplicate"})
        if rng.random() < 0.25:
            miss = near_miss(rng, base, cities)
            if miss is not None:
                records.append({**miss, "entity": len(bases) + len(records), "role": "near_miss"})
    rng.shuffle(records)
    frame = pl.DataFrame(records, infer_schema_length=None)
    return frame.with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))


def _normalised(records: pl.DataFrame, *, phone: bool) -> pl.DataFrame:
    rows = records.select(
        "row_ord",
        pl.lit("eval.csv").alias("source_file"),
        (pl.col("row_ord") + 1).alias("source_row"),
        pl.lit(None, pl.String).alias("source_id"),  # generated: no ids (the id rule off)
        pl.col("name").alias("poi_name"),
        pl.col("street").cast(pl.String),
        pl.lit(None, pl.String).alias("address"),
        pl.col("city").cast(pl.String),
        pl.col("region").cast(pl.String),
        pl.col("postcode").cast(pl.String),
        pl.col("country").cast(pl.String),
        pl.col("latitude").cast(pl.String),
        pl.col("longitude").cast(pl.String),
        (pl.col("phone") if phone else pl.lit(None)).cast(pl.String).alias("phone"),
    )
    places, _rejects, _info = normalize(rows)  # a phone column is read as a run reads it
    return places.with_columns(place_keys(places))


def groups(records: pl.DataFrame, *, threshold: float, phone: bool) -> tuple[pl.DataFrame, Any]:
    """Each record's final group: exact place_key first, then the fuzzy clusters."""
    places = _normalised(records, phone=phone)
    unique = places.sort("row_ord").unique("place_key", keep="first", maintain_order=True)
    matched, info = fuzzy_match(unique, threshold=threshold)
    final = places.join(matched.select("place_key", "cluster_key"), on="place_key", how="left")
    final = final.with_columns(pl.coalesce("cluster_key", "place_key").alias("group"))
    return final.select("row_ord", "place_key", "group"), info


def _pairs(frame: pl.DataFrame, by: str) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for members in frame.group_by(by).agg(pl.col("row_ord").sort()).get_column("row_ord"):
        if len(members) > 1:
            out.update(combinations(members.to_list(), 2))
    return out


def score(records: pl.DataFrame, *, threshold: float, phone: bool) -> dict[str, Any]:
    """Pairwise precision and recall of the exact key alone and of exact + fuzzy."""
    t0 = time.perf_counter()
    grouped, info = groups(records, threshold=threshold, phone=phone)
    seconds = time.perf_counter() - t0
    true = _pairs(records, "entity")
    result: dict[str, Any] = {"records": records.height, "true_pairs": len(true),
                              "seconds": seconds, "info": info}  # fmt: skip
    for name, by in (("exact", "place_key"), ("fuzzy", "group")):
        predicted = _pairs(grouped, by)
        hit = len(predicted & true)
        result[name] = {
            "predicted": len(predicted),
            "correct": hit,
            "precision": hit / len(predicted) if predicted else 1.0,
            "recall": hit / len(true) if true else 1.0,
            "false": sorted(predicted - true)[:20],
        }
    return result


def restaurants(out: Path, *, threshold: float) -> dict[str, int]:
    """Fodor's + Zagat through normalise, exact key and fuzzy pass; matched pairs to a CSV."""
    frames = []
    for guide in ("fodors", "zagat"):
        g = pl.read_csv(SAMPLES / f"restaurants_{guide}.csv", infer_schema_length=0)
        frames.append(g.with_columns(pl.lit(guide).alias("guide")))
    raw = pl.concat(frames).with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))
    records = raw.select("row_ord", pl.col("name"), pl.col("addr").alias("street"), "city",
                         pl.lit(None, pl.String).alias("region"),
                         pl.lit(None, pl.String).alias("postcode"),
                         pl.lit(None, pl.String).alias("country"),
                         pl.lit(None, pl.Float64).alias("latitude"),
                         pl.lit(None, pl.Float64).alias("longitude"), "phone")  # fmt: skip
    counts: dict[str, int] = {"rows": raw.height}
    out.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for phone in (True, False):
        grouped, _info = groups(records, threshold=threshold, phone=phone)
        label = "with_phone" if phone else "without_phone"
        counts["exact_pairs"] = len(_pairs(grouped, "place_key"))
        pairs = _pairs(grouped, "group")
        cross = [(a, b) for a, b in pairs if raw["guide"][a] != raw["guide"][b]]
        counts[f"pairs_{label}"] = len(pairs)
        counts[f"cross_guide_pairs_{label}"] = len(cross)
        if phone:
            written = sorted(pairs)
    rows = raw.select("row_ord", "guide", "id", "name", "addr", "city", "phone")
    left = pl.DataFrame(written, schema=["a", "b"], orient="row")
    table = left.join(rows.rename(lambda c: f"{c}_a"), left_on="a", right_on="row_ord_a").join(
        rows.rename(lambda c: f"{c}_b"), left_on="b", right_on="row_ord_b"
    )
    table.drop("a", "b").write_csv(out)
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--airports", type=int, default=1500)
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    p.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--no-runs", action="store_true", help="skip the sandbox runs of the guides")
    args = p.parse_args(argv)
    records = build(args.seed, args.airports)
    results = {
        phone: score(records, threshold=args.threshold, phone=phone) for phone in (False, True)
    }
    for phone, r in results.items():
        for name in ("exact", "fuzzy"):
            m = r[name]
            print(
                f"phone={phone} {name}: precision {m['precision']:.4f} recall {m['recall']:.4f}"
                f" ({m['correct']}/{m['predicted']} predicted, {r['true_pairs']} true)"
            )
        print("  false pairs:", r["fuzzy"]["false"][:10], r["info"])
    counts = restaurants(
        ROOT / "bench" / "work" / "restaurant_matches.csv", threshold=args.threshold
    )
    print("restaurants:", counts)
    if not args.no_write:
        from matching_report import write_eval_section  # bench/ sibling

        write_eval_section(Path(args.out), args=args, records=records, results=results,
                           restaurants=counts)  # fmt: skip
    real(args)
    return 0


def real(args: argparse.Namespace) -> None:
    """The directories, the guides, and (unless --no-runs) the guides' runs: printed, and
    written to RESULTS.md unless --no-write."""
    import matching_real  # bench/ siblings
    from matching_report import write_real_section

    kw = {"threshold": args.threshold}
    directories = matching_real.evaluate_directories(**kw)
    for r in directories:
        print({k: v for k, v in r.items() if k != "seconds"})
    guides = matching_real.evaluate_guides(**kw)
    guides_exact = matching_real.evaluate_guides("exact")
    print("guides:", guides, "exact:", guides_exact)
    runs = None
    if not args.no_runs:
        import matching_runs

        runs = matching_runs.compare(match_threshold=args.threshold)
        print("runs:", runs)
    if not args.no_write:
        command = ".venv/bin/python bench/matching_eval.py" + (" --no-runs" if args.no_runs else "")
        if args.threshold != DEFAULT_THRESHOLD:
            command += f" --threshold {args.threshold}"
        write_real_section(Path(args.out), command=command, directories=directories,
                           guides=guides, guides_exact=guides_exact, runs=runs,
                           threshold=args.threshold)  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
