"""Plan a research run: its options (`ResearchOptions`, and how its inputs are read), requests of
10 places, the estimate from the rate card.

Requests are built once, columnar, and stored with the run (`research_requests.body`), so a
resumed run sends the same places and fields. The estimate is local: places x (fields +
existence) x the rate card's `deep_research_field` credits, plus its `verify_identity` credits
per row; the run checks it against the service's own `estimate_only` answer on a first request.
Each request carries `max_credits` = the budget left, so none can take the run past it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from placeflow.api.models import (
    MAX_RESEARCH_PLACES,
    DeepResearchFieldSpec,
    PricingCard,
    UsageResponse,
)
from placeflow.errors import OptionsError, RateCardError
from placeflow.fields import PLACE_FIELDS
from placeflow.options import RunOptions
from placeflow.pipeline.plan import Estimate

FIELD_RATE = "deep_research_field"
ROUTE = "deep_research"
"""The route of a research request (its estimate's, its PlanInfo's, its ChunkSubmitted's)."""
IDENTITY_RATE = "verify_identity"


@dataclass(frozen=True)
class Rates:
    """Credits per place per attribute, and per row for verify_identity."""

    per_field: int
    per_identity: int

    @classmethod
    def from_card(cls, card: PricingCard, usage: UsageResponse | None = None) -> Rates:
        field = card.rate(FIELD_RATE)
        identity = card.rate(IDENTITY_RATE)
        per_field = field.credits if field and field.credits is not None else None
        if per_field is None and usage is not None:
            per_field = usage.credits_per_field
        if per_field is None:
            raise RateCardError(
                f"GET /v1/pricing has no {FIELD_RATE} rate with credits: cannot estimate"
            )
        if usage is not None and usage.credits_per_field not in (None, per_field):
            raise RateCardError(
                f"the rate card says {per_field} credit(s) per field but GET /v1/usage says"
                f" {usage.credits_per_field} for this key: refusing to guess"
            )
        per_identity = identity.credits if identity and identity.credits is not None else 1
        return cls(per_field=per_field, per_identity=per_identity)


@dataclass(frozen=True)
class ResearchSpec:
    """What every request of the run asks."""

    fields: tuple[DeepResearchFieldSpec, ...]
    verify_identity: bool = False
    validate_existence: bool = False

    def per_row(self, rates: Rates) -> int:
        attributes = len(self.fields) + int(self.validate_existence)
        return attributes * rates.per_field + int(self.verify_identity) * rates.per_identity

    def fields_json(self) -> str:
        return json.dumps([f.model_dump(mode="json") for f in self.fields], separators=(",", ":"))

    def signature(self) -> str:
        """The run's signature (runs.signature): research|<hash of the fields and flags>|, as
        migration 017 gives the research runs it moved (answers are fresh per field instead)."""
        flags = f"{self.fields_json()}|{json.dumps(self.verify_identity)}|"
        flags += json.dumps(self.validate_existence)
        return f"research|{hashlib.sha256(flags.encode()).hexdigest()[:16]}|"

    def body_tail(self) -> str:
        """The body after the pois array: attributes and the flags."""
        return (
            f',"attributes":{self.fields_json()}'
            f',"validate_existence":{json.dumps(self.validate_existence)}'
            f',"verify_identity":{json.dumps(self.verify_identity)}}}'
        )


READ_AS = RunOptions.parse({"mode": "validate", "attributes": (), "include_summary": False})
"""The options a source reads with unless told otherwise (`read_options`): no column mapping,
UTF-8, commas, and (for the warehouse) every place some run answered, whatever it asked."""


SPENDING = ("max_credits", "max_age_days", "force", "resend_uncertain")
"""The run options that say how a research spends (its budget, what is fresh, what is sent
again), not how it reads: outside its identity, so the same command with a larger --max-credits
goes on with the research it stopped."""


def read_options(
    mapping: Mapping[str, str] | Sequence[str] | None = None,
    encoding: str | None = None,
    separator: str | None = None,
    **spending: Any,
) -> RunOptions:
    """A research's run options: READ_AS with a column mapping (FIELD=COLUMN strings or a
    dict), an encoding or a separator, and how it spends (`SPENDING`: max_credits,
    max_age_days, force, resend_uncertain), checked as `placeflow run` checks them
    (OptionsError)."""
    given = {"mapping": mapping, "encoding": encoding, "separator": separator}
    chosen = {name: value for name, value in given.items() if value}
    unknown = set(spending) - set(SPENDING)
    if unknown:
        raise OptionsError(f"a research's run options do not take {', '.join(sorted(unknown))}")
    chosen |= {name: value for name, value in spending.items() if value is not None}
    return RunOptions.parse({**READ_AS.model_dump(), **chosen}) if chosen else READ_AS


@dataclass(frozen=True)
class ResearchOptions:
    """A research: what it asks (`spec`, a `sample` of its first places), how a lost answer is
    judged (`exclusive_key`: the key is this research's alone), whether it only estimates, and
    the run's options it runs with (`run`, `read_options`: how its inputs are read, its budget,
    max age, force, resend-uncertain and warehouse wait; RunOptions, the one options model)."""

    spec: ResearchSpec
    run: RunOptions = READ_AS
    sample: int | None = None
    exclusive_key: bool = True
    estimate_only: bool = False

    @property
    def max_credits(self) -> int | None:
        return self.run.max_credits

    def reading(self) -> RunOptions:
        """How its inputs are read: its run options, how it spends left at READ_AS's."""
        return self.run.model_copy(update={n: getattr(READ_AS, n) for n in SPENDING})

    def identity(self) -> tuple[str, ...]:
        """What the research asks beyond how it reads (`reading`): part of the command's
        identity (`placeflow.runner.prepare.fingerprint`); how it spends is not."""
        spec = self.spec
        flags = [spec.verify_identity, spec.validate_existence, self.sample]
        return ("research", spec.fields_json(), json.dumps(flags))


def place_requests(unique: pl.DataFrame) -> pl.DataFrame:
    """One DeepResearchPOI JSON per place (`id` = place_key), in the frame's order."""
    fields = [pl.col("place_key").alias("id"), *(pl.col(f) for f in PLACE_FIELDS)]
    return unique.select("place_key", pl.struct(fields).struct.json_encode().alias("request"))


def plan_requests(places: pl.DataFrame, spec: ResearchSpec, rates: Rates) -> pl.DataFrame:
    """Number the places into requests of 10: place_key, request_no, position, request per place,
    and per request (on every row of it) the exact body, its sha256 and its most credits."""
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    planned = place_requests(places).with_columns(
        (index // MAX_RESEARCH_PLACES).cast(pl.Int32).alias("request_no"),
        (index % MAX_RESEARCH_PLACES).cast(pl.Int32).alias("position"),
    )
    bodies = planned.group_by("request_no", maintain_order=True).agg(
        pl.len().cast(pl.Int32).alias("places"),
        (
            pl.lit('{"pois":[') + pl.col("request").str.join(",") + pl.lit("]" + spec.body_tail())
        ).alias("body"),
    )
    bodies = bodies.with_columns(
        pl.col("body")
        .map_elements(lambda b: hashlib.sha256(b.encode()).hexdigest(), return_dtype=pl.String)
        .alias("body_sha256"),  # one call per request (10 places), not per place
        (pl.col("places") * spec.per_row(rates)).cast(pl.Int32).alias("credits_max"),
    )
    return planned.join(bodies, on="request_no", how="left", maintain_order="left")


def requests_of(plan: pl.DataFrame) -> pl.DataFrame:
    """One row per request of a plan."""
    return plan.select("request_no", "places", "body", "body_sha256", "credits_max").unique(
        "request_no", maintain_order=True
    )


def estimate(places: int, spec: ResearchSpec, rates: Rates) -> Estimate:
    """The most the run's requests can charge (the charge itself when no row fails), as the
    run's estimate (`placeflow.pipeline.plan.Estimate`): route deep_research, priced at the
    rate card's deep_research_field per attribute (and verify_identity per row)."""
    requests = -(-places // MAX_RESEARCH_PLACES)
    per_row = spec.per_row(rates)
    return Estimate(
        places=places, credits=places * per_row, requests=requests, route=ROUTE,
        rate_key=FIELD_RATE, credits_per_place=per_row,
    )  # fmt: skip
