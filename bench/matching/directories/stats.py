#!/usr/bin/env python3
"""Count positive pairs and hard-negative patterns in labelled.csv -> stats.json (+ printed table).

Pairs are counted over distinct records; a *negative* pair is two records with different
entity_id.  Hard-negative patterns (each pair counted once per pattern):
  same_name_1km        identical normalised name, both geocoded, <= 1 km apart
  same_name_same_city  identical normalised name and identical normalised city
  same_name_same_street identical normalised name and identical normalised street
  within_50m           any two records <= 50 m apart (any name)
  numbered_variant     names equal once digits / ordinal words / roman numerals are removed,
                       but different with them ("1店"/"2店", "Terminal 1/2", "No. 3"),
                       same city or <= 2 km
  qualifier_variant    names equal once direction/level qualifiers and bracketed parts are
                       removed (east/west, tief, Gleis, Terminal, (Berlin) ...), same city
                       or <= 2 km
  same_street_diff_no  same street once house numbers are removed, different numbers, same city
  same_phone           identical phone digits (>= 6 digits)
Only original (perturbed=false) rows are used for the negative patterns.
"""

import csv
import gzip
import json
import math
import re
import unicodedata
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

HERE = Path(__file__).resolve().parent


def norm(s):
    if not s:
        return ""
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if not unicodedata.combining(c)).lower().replace("ß", "ss")
    return " ".join(re.sub(r"[^\w]+", " ", s).split())


ORD = (
    r"\b(\d+(st|nd|rd|th|er|e)?|first|second|third|fourth|fifth|i{1,3}|iv|v|vi{1,3}|"
    r"no|nr|erste[rs]?|zweite[rs]?|dritte[rs]?|一|二|三|四|五|第)\b|\d+"
)
QUAL = (
    r"\b(east|west|north|south|e|w|n|s|ost|nord|sud|tief|oben|unten|gleis|terminal|gate|"
    r"concourse|level|lower|upper|extn|extension|main|branch|bhf|bahnhof|hbf|station|"
    r"ctr|centre|center|s|u|sbahn|ubahn)\b"
)


def strip_num(n):
    return " ".join(re.sub(ORD, " ", n).split())


def strip_qual(name_raw):
    s = re.sub(r"\([^)]*\)", " ", name_raw or "")
    return " ".join(re.sub(QUAL, " ", norm(s)).split())


def hav(a, b):
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = (
        math.sin((la2 - la1) / 2) ** 2
        + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    )
    return 2 * 6371008.8 * math.asin(math.sqrt(h))


def main():
    with gzip.open(HERE / "labelled.csv.gz", "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["pt"] = (float(r["latitude"]), float(r["longitude"])) if r["latitude"] else None
        r["nn"] = norm(r["name"])
        r["nc"] = norm(r["city"])
        r["ns"] = norm(r["street"])
        r["pert"] = r["perturbed"] == "true"
    stats = defaultdict(Counter)
    examples = defaultdict(list)

    # ---------------- positives
    ent = defaultdict(list)
    for r in rows:
        ent[r["entity_id"]].append(r)
    for _e, rs in ent.items():
        for a, b in combinations(rs, 2):
            key = a["source"] if a["source"] == b["source"] else "cross_source"
            kind = "pos_perturbed" if (a["pert"] or b["pert"]) else "pos_genuine"
            stats[key][kind] += 1
            stats["ALL"][kind] += 1
            if (
                key == "cross_source"
                and kind == "pos_genuine"
                and len(examples["pos_cross_source"]) < 12
            ):
                examples["pos_cross_source"].append(
                    (a["source"], a["name"], b["source"], b["name"])
                )
    stats["ALL"]["entities"] = len(ent)
    stats["ALL"]["rows"] = len(rows)
    multi_src = Counter(
        tuple(sorted({r["source"] for r in rs}))
        for rs in ent.values()
        if len({r["source"] for r in rs}) > 1
    )
    for k, v in multi_src.items():
        stats["cross_source_entities"]["+".join(k)] = v

    orig = [r for r in rows if not r["pert"]]

    def add(pattern, a, b):
        key = a["source"] if a["source"] == b["source"] else "cross_source"
        stats[key][pattern] += 1
        stats["ALL"][pattern] += 1
        ex = examples[f"{key}/{pattern}"]
        if len(ex) < 5:
            ex.append(
                (
                    a["name"],
                    a.get("street") or "",
                    b["name"],
                    b.get("street") or "",
                    round(hav(a["pt"], b["pt"])) if a["pt"] and b["pt"] else None,
                )
            )

    def pairs_in(groups, cond, pattern, cap=400):
        for g in groups.values():
            if len(g) < 2 or len(g) > cap:
                continue
            for a, b in combinations(g, 2):
                if a["entity_id"] != b["entity_id"] and cond(a, b):
                    add(pattern, a, b)

    def near(m):
        return lambda a, b: (
            a["pt"] is not None and b["pt"] is not None and hav(a["pt"], b["pt"]) <= m
        )

    by_name = defaultdict(list)
    for r in orig:
        if r["nn"]:
            by_name[r["nn"]].append(r)
    pairs_in(by_name, near(1000), "same_name_1km")
    pairs_in(by_name, lambda a, b: a["nc"] and a["nc"] == b["nc"], "same_name_same_city")
    pairs_in(by_name, lambda a, b: a["ns"] and a["ns"] == b["ns"], "same_name_same_street")

    def same_city_or_2km(a, b):
        return (a["nc"] and a["nc"] == b["nc"]) or near(2000)(a, b)

    by_num = defaultdict(list)
    for r in orig:
        k = strip_num(r["nn"])
        if k and k != r["nn"]:
            by_num[k].append(r)
    for r in orig:  # also pair the un-numbered name with numbered siblings
        if r["nn"] in by_num and strip_num(r["nn"]) == r["nn"]:
            by_num[r["nn"]].append(r)
    pairs_in(by_num, lambda a, b: a["nn"] != b["nn"] and same_city_or_2km(a, b), "numbered_variant")

    by_q = defaultdict(list)
    for r in orig:
        k = strip_qual(r["name"])
        if k:
            by_q[k].append(r)
    pairs_in(
        by_q,
        lambda a, b: (
            a["nn"] != b["nn"]
            and strip_num(a["nn"]) != strip_num(b["nn"])
            and same_city_or_2km(a, b)
        ),
        "qualifier_variant",
    )

    by_street = defaultdict(list)
    for r in orig:
        if r["ns"] and re.search(r"\d", r["ns"]):
            by_street[(strip_num(r["ns"]), r["nc"])].append(r)
    pairs_in(by_street, lambda a, b: a["nc"] and a["ns"] != b["ns"], "same_street_diff_no")

    by_phone = defaultdict(list)
    for r in orig:
        d = re.sub(r"\D", "", r["phone"] or "")
        if len(d) >= 6:
            by_phone[d].append(r)
    for g in by_phone.values():  # can be huge (call-centre numbers): count combinatorially
        ents = Counter(r["entity_id"] for r in g)
        n = len(g)
        tot = n * (n - 1) // 2 - sum(c * (c - 1) // 2 for c in ents.values())
        srcs = {r["source"] for r in g}
        key = g[0]["source"] if len(srcs) == 1 else "cross_source"
        stats[key]["same_phone"] += tot
        stats["ALL"]["same_phone"] += tot

    # within 50 m: grid
    cell = 0.0006
    grid = defaultdict(list)
    for r in orig:
        if r["pt"]:
            grid[(int(r["pt"][0] // cell), int(r["pt"][1] // cell))].append(r)
    for (i, j), g in grid.items():
        cand = []
        for di in (0, 1):
            for dj in (-1, 0, 1):
                if di == 0 and dj == -1:
                    continue
                cand.append(grid.get((i + di, j + dj), []))
        for k, other in enumerate(cand):
            if not other:
                continue
            it = (
                combinations(g, 2)
                if (k == 1 and other is g)
                else ((a, b) for a in g for b in other)
            )
            if other is g:
                it = combinations(g, 2)
            for a, b in it:
                if a["entity_id"] != b["entity_id"] and hav(a["pt"], b["pt"]) <= 50:
                    add("within_50m", a, b)

    out = {"stats": {k: dict(v) for k, v in stats.items()}, "examples": examples}
    (HERE / "stats.json").write_text(
        json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    pats = [
        "rows",
        "entities",
        "pos_genuine",
        "pos_perturbed",
        "same_name_1km",
        "same_name_same_city",
        "same_name_same_street",
        "within_50m",
        "numbered_variant",
        "qualifier_variant",
        "same_street_diff_no",
        "same_phone",
    ]
    print("source".ljust(22) + "".join(p[:12].rjust(13) for p in pats[2:]))
    for k in sorted(stats):
        if k == "cross_source_entities":
            continue
        print(k.ljust(22) + "".join(str(stats[k].get(p, 0)).rjust(13) for p in pats[2:]))
    print("cross-source entities:", dict(stats["cross_source_entities"]))


if __name__ == "__main__":
    main()
