"""Credits of one key, kept as the service keeps them: holds, charges and releases, in a ledger;
and each row billed, by its identity (`row_identity`), to find a row billed twice."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

EntryKind = Literal["hold", "charge", "release"]


def row_identity(kind: str, poi: dict[str, Any]) -> str:
    """A row's identity in the ledger of rows billed: its kind and `id`, or, without an id,
    a digest of its identity fields."""
    rid = poi.get("id")
    if rid is None:
        fields = {k: poi.get(k) for k in ("poi_name", "address", "street", "city", "country")}
        rid = "#" + hashlib.sha256(repr(sorted(fields.items())).encode()).hexdigest()[:16]
    return f"{kind}:{rid}"


class InsufficientCredits(Exception):
    """The sandbox's own: a hold the balance cannot cover (answered as a 402 reply)."""

    def __init__(self, needed: int, available: int) -> None:
        super().__init__(f"needs {needed} credits, {available} available")
        self.needed = needed
        self.available = available


@dataclass(frozen=True)
class LedgerEntry:
    at: float
    kind: EntryKind
    credits: int
    ref: str
    """The batch_id or request_id the entry belongs to."""


@dataclass
class CreditAccount:
    quota: int
    charged: int = 0
    held: int = 0
    released: int = 0
    held_total: int = 0
    entries: list[LedgerEntry] = field(default_factory=list)
    rows_billed: Counter[str] = field(default_factory=Counter)
    """How many times each row (by its identity: kind and id) was billed, by any route."""
    rows_log: list[str] | None = None
    """The rows billed since the state was last kept (None: the state is not kept)."""

    @property
    def available(self) -> int:
        return self.quota - self.charged - self.held

    def require(self, credits: int) -> None:
        if credits > self.available:
            raise InsufficientCredits(credits, max(0, self.available))

    def charge(self, credits: int, ref: str, at: float) -> None:
        """Charge a synchronous request outright (the caller has checked `require`)."""
        if credits:
            self.charged += credits
            self.entries.append(LedgerEntry(at, "charge", credits, ref))

    def hold(self, credits: int, ref: str, at: float) -> None:
        self.require(credits)
        self.held += credits
        self.held_total += credits
        self.entries.append(LedgerEntry(at, "hold", credits, ref))

    def settle(self, held: int, charge: int, ref: str, at: float) -> None:
        """Turn `charge` of a hold into a charge and release the rest of it."""
        charge = min(charge, held)
        self.held -= held
        self.charged += charge
        self.released += held - charge
        if charge:
            self.entries.append(LedgerEntry(at, "charge", charge, ref))
        if held - charge:
            self.entries.append(LedgerEntry(at, "release", held - charge, ref))

    def set_balance(self, available: int) -> None:
        """Sandbox control: make `available` what is spendable now (credits running out)."""
        self.quota = available + self.charged + self.held

    def bill_rows(self, row_ids: Iterable[str]) -> None:
        """Record the rows a charge paid for (a sync call's successful places, a job's billable
        rows): a row billed twice, by any route, shows in `rows_billed_twice`."""
        if self.rows_log is None:
            self.rows_billed.update(row_ids)
            return
        rows = list(row_ids)
        self.rows_billed.update(rows)
        self.rows_log.extend(rows)

    def rows_billed_twice(self) -> list[str]:
        return sorted(row for row, n in self.rows_billed.items() if n > 1)

    def credits_by_ref(self) -> dict[str, int]:
        """Credits charged per request or job (its request_id or batch_id)."""
        out: Counter[str] = Counter()
        for e in self.entries:
            if e.kind == "charge":
                out[e.ref] += e.credits
        return dict(out)

    def charges_by_ref(self) -> Counter[str]:
        """How many charge entries each ref has: a settled job or request has exactly one."""
        return Counter(e.ref for e in self.entries if e.kind == "charge")

    def summary(self) -> dict[str, int]:
        return {
            "quota": self.quota,
            "held": self.held,
            "held_total": self.held_total,
            "charged": self.charged,
            "released": self.released,
            "available": self.available,
        }
