"""A run's summary (`RunSummary`), as its account makes it (`placeflow.pipeline.account`):
what `placeflow run`, `resume`, `refresh` and `research` print, publish and return, a research
run's own figures in `ResearchInfo`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from placeflow.pipeline.stages import StageInfos


@dataclass(frozen=True)
class ResearchInfo:
    """A research run's own figures beside the run's (its chunks are requests): requests still
    to settle and answered; `not_due`, of a research from the warehouse, the places left out
    because their research is fresh (None otherwise)."""

    requests_open: int
    requests_answered: int
    not_due: int | None = None


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    status: str
    target: str
    rows_read: int
    rejected: int
    duplicates: int
    skipped_fresh: int
    submitted: int
    succeeded: int
    failed: int
    not_answered: int
    credits_estimated: int
    held: int
    charged: int
    released: int
    usage_before: int | None
    usage_after: int | None
    usage_delta: int | None
    ledger_vs_usage: int | None
    possible_extra_credits: int
    chunks: int
    chunks_failed: int
    seconds: float
    message: str | None
    fuzzy_duplicates: int = 0
    """Of `duplicates`, the rows the fuzzy pass merged into another place (match_rule
    probabilistic); the rest repeat an exact place_key."""
    adjustment: int = 0
    """Signed adjustment entries that balanced the ledger to the service's usage delta."""
    difference: int | None = None
    """usage_delta - charged before any adjustment (None when usage is unknown)."""
    held_failing: int = 0
    """Input rows whose place failed several times in a row: held back, not sent."""
    claimed: int = 0
    """Places another unfinished run was buying (the same answer): left to it, not paid again."""
    claims_answered: int = 0
    """Of `claimed`, the places that run has answered (their outcomes are this run's rows')."""
    claims_left: dict[str, int] = field(default_factory=dict)
    """Of `claimed`, the places still to come, by the run buying them: answered when it loads
    them (`placeflow resume RUN` finishes a run whose process is gone)."""
    rejected_by_field: dict[str, int] = field(default_factory=dict)
    """Of `rejected`, how many rows by the field that failed first ("row" when the row itself
    could not be read), most first; each row's reason is in `rejects`."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """Per file which column fed which field and which were ignored, and input warnings
    (`placeflow.pipeline.mapping_report`); empty for a resume, which reads nothing."""
    budget_warnings: list[str] = field(default_factory=list)
    """Budgets (`placeflow budget`) spent past their warning share once this run spent: one
    line each, also on stderr and announced as an event."""
    changes: dict[str, int] = field(default_factory=dict)
    """Changes this run found in places it re-checked (place_changes rows), by kind."""
    places_changed: int = 0
    changed_per_credit: float | None = None
    """Places found changed per credit charged (None when nothing was charged)."""
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    """Wall seconds by stage in the order they ran (per-chunk stages summed), and `total`."""
    cpu_timings: dict[str, float] = field(default_factory=dict, compare=False)
    """CPU seconds of the process, by stage as `timings`."""
    stages: StageInfos = field(default_factory=lambda: StageInfos(), compare=False, repr=False)
    """Each stage's own summary from this invocation (ReadInfo, NormalizeInfo, ..., the
    submit/fetch/load infos as lists), by stage name; not part of `as_dict`."""
    research: ResearchInfo | None = None
    """A research run's own figures (None for a run of the place endpoints); `as_dict` gives
    them beside the run's, as `placeflow research --json` prints them."""

    def as_dict(self) -> dict[str, Any]:
        """The summary's fields as plain values (the CLI's JSON, the flow's result)."""
        out = asdict(self)
        del out["stages"]
        research = out.pop("research")
        if research:
            out.update((k, v) for k, v in research.items() if v is not None)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        """The summary `as_dict` gave (its research figures gathered again); keys that are no
        field of it (a command's `exit_code`, `report`, ...) are left out."""
        names = {f.name for f in fields(cls)} - {"stages", "research"}
        found = {k: v for k, v in data.items() if k in names}
        given = {f.name: data[f.name] for f in fields(ResearchInfo) if f.name in data}
        research = ResearchInfo(**given) if "requests_open" in given else None
        return cls(**found, research=research)
