"""Contract: a job's result file is the same bytes for the same places, seed, epoch and clock.

The digests below were captured from the per-row renderer before the columnar one replaced it;
the files' sha256 are published to the client, so any change of a byte is a change of contract
within one sandbox version, and these digests say whether one happened.
"""

from __future__ import annotations

import gzip
import hashlib
import random
from typing import Any

import httpx
import pytest

from placeflow.emulator import KeySpec, ManualClock, Sandbox, SandboxConfig
from placeflow.emulator.settings import FaultConfig

KEY = "sk_test_golden_key_0001"
NAMES = (
    "Cafe Luna",
    "  The  Old   Mill ",
    "Café Señor",
    "BÄCKEREI Müller",
    "Joe's Diner #2",
    "\u03a3\u039f\u03a6\u0399\u0391 \u03a4\u0391\u0392\u0395\u03a1\u039d\u0391",
    "北京饭店",
    "Tab\tand\nnewline",
    "İstanbul Kebap",
    "",
    "A" * 40,
)
CITIES = ("Springfield", "  Portland ", "Zürich", None, "", "São Paulo", "tulsa")
COUNTRIES = ("US", "gb", "DE", "fr", None, "ZZ", "br", "JP")
ATTRIBUTES = (
    None,
    ["opening_hours", "phone", "website", "existence", "open_closed"],
    ["email", "facebook", "instagram", "tiktok", "website", "phone"],
    ["existence"],
    ["open_closed", "opening_hours", "opening_hours"],
)


def places(n: int, seed: int, *, enrich: bool) -> list[dict[str, Any]]:
    """Varied places: accents, odd spacing, missing fields, coordinates only, odd ids."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(n):
        name = rng.choice(NAMES) or f"Place {i}"
        row: dict[str, Any] = {"poi_name": f"{name} {i % 7}" if rng.random() < 0.5 else name}
        if rng.random() < 0.9:
            row["id"] = rng.choice((f"row-{i}", f"é-{i}", f'q"{i}\\', f"r{i}\t"))
        if rng.random() < 0.15:  # coordinates only
            row["latitude"] = rng.choice((0.0, round(rng.uniform(-80, 80), 6)))
            row["longitude"] = rng.choice((0.0, round(rng.uniform(-170, 170), 6)))
        else:
            row |= {
                "city": rng.choice(CITIES),
                "country": rng.choice(COUNTRIES),
                "street": rng.choice((None, f"{i} Main St", " ")),
                "postcode": rng.choice((None, f"{10000 + i}")),
                "region": rng.choice((None, "OR", "Bavaria")),
            }
            if rng.random() < 0.3:
                row["address"] = f"{i} High Street, {row['city'] or 'Town'}"
            if rng.random() < 0.5:
                row["latitude"], row["longitude"] = rng.uniform(-60, 60), rng.uniform(-120, 120)
        if enrich:
            attrs = rng.choice(ATTRIBUTES)
            if attrs is not None:
                row["attributes"] = attrs
            if rng.random() < 0.1:
                row["include_summary"] = True
            if rng.random() < 0.2:
                row["response_format"] = "cell"
        out.append(row)
    return out


def rendered(
    kind: str,
    pois: list[dict[str, Any]],
    *,
    seed: int,
    epoch: int = 0,
    cancel_after: float = 0,
    fail_rate: float = 0.01,
    **faults: Any,
) -> str:
    """The job's result file sha256, its progress and the rows billed, on a manual clock."""
    clock = ManualClock(1_790_000_000.0)
    config = SandboxConfig(
        keys=(KeySpec(key=KEY, credits=10**9),),
        seed=seed,
        epoch=epoch,
        clock=clock,
        fail_rate=fail_rate,
        rows_per_second=100.0 if cancel_after else None,
        rate_window_scale=0.001,
        faults=FaultConfig(**faults),
    )
    sb = Sandbox(config)
    with httpx.Client(
        transport=sb.transport(), base_url=sb.base_url, headers={"X-API-Key": KEY}
    ) as http:
        batch = http.post(f"/v1/jobs/{kind}", json={"pois": pois}).json()["batch_id"]
        clock.advance(cancel_after or 1.0)
        if cancel_after:
            assert http.delete(f"/v1/jobs/{batch}").json()["cancelled"]
        status = http.get(f"/v1/jobs/{batch}").json()
        entry = status["results"]["files"][0]
        body = http.get(entry["url"]).content
    assert hashlib.sha256(body).hexdigest() == entry["sha256"]
    gzip.decompress(body)  # a whole gzip stream
    charged = sb.stats()["keys"][KEY]["billed"]["rows"]
    p = status["progress"]
    return f"{entry['sha256']} {p['processed']} {p['succeeded']} {p['failed']} {charged}"


GOLDEN = {  # sha256 of the file, processed, succeeded, failed, rows billed
    "validate-3": (
        "9c61a2120e8150108702de4c952ef17a67fab221871b8c7963a596bbe3ba19de 1500 1476 24 1476"
    ),
    "enrich-5": (
        "accfafcfe814d00d18edf092bb30640137a0eac0e8a063e4ce9f689280191d4c 1500 1178 322 1169"
    ),
    "enrich-epoch": (
        "e8ed51a5ef9099d717089976b5038aadbbf0cea190684f5f34e69b44c87d309e 1500 1421 79 1412"
    ),
    "enrich-null-status": (
        "869086c349b501b699e66881fe6b11a36f619bc10886fc863ac0e9f90bbc5181 1500 1425 75 1303"
    ),
    "enrich-cancelled": (
        "2685a38b7008f733384bdcaed3d025c210ca4a2cd9ddc407118358840ab7b098 750 713 37 708"
    ),
}


@pytest.mark.parametrize(
    ("name", "kind", "seed", "options"),
    [
        ("validate-3", "validate", 3, {}),
        ("enrich-5", "enrich", 5, {"fail_rate": 0.2}),
        ("enrich-epoch", "enrich", 11, {"epoch": 2}),
        ("enrich-null-status", "enrich", 7, {"null_status_rate": 0.3, "bill_null_status": False}),
        ("enrich-cancelled", "enrich", 13, {"cancel_after": 7.5}),
    ],
)
def test_result_file_bytes_are_unchanged(
    name: str, kind: str, seed: int, options: dict[str, Any]
) -> None:
    """The result file of fixed places and seed is byte for byte the one captured before."""
    pois = places(1500, seed, enrich=kind == "enrich")
    assert rendered(kind, pois, seed=seed, **options) == GOLDEN[name]
