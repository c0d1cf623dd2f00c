"""The stage registry: every stage a run (and its modes, refresh and research) calls, declared
once: its name, whether it runs once per chunk, whether it talks to the service, the types of
the info it returns, and how a live display names it while it runs.

`placeflow.runner.steps.Stages` calls stages by these names (`StageName`, checked by mypy) and
keeps their infos typed (`StageInfos`, the run summary's `stages`, as dlt keeps a step's
StepInfo); the flows' step wrapper makes a task of a per-run stage and a logged call of a
per-chunk one, retrying a network stage's transient failures (`placeflow.flows.tasks`); the live
display names the stage the run is in (`placeflow.cli.progress`). Adding a stage is an entry in
`StageName` and one in `STAGES` (tests/pipeline/test_stages.py holds them equal, and every info a
run and a research hand back to their types). The info types are named, not imported, so the
registry loads in no time (the live display reads it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from placeflow.pipeline.dedupe import DedupeInfo
    from placeflow.pipeline.fetch import Fetched
    from placeflow.pipeline.fresh import FreshInfo
    from placeflow.pipeline.load import LoadInfo
    from placeflow.pipeline.normalize import NormalizeInfo
    from placeflow.pipeline.plan import PlanInfo
    from placeflow.pipeline.readstream import ReadInfo
    from placeflow.pipeline.research.budget import Budget
    from placeflow.pipeline.research.send import SendInfo
    from placeflow.pipeline.submit import SubmitInfo, Uncertain

StageName = Literal[
    "warehouse", "read", "normalize", "dedupe", "fresh", "plan", "budget", "open", "submit",
    "send-batch", "poll", "fetch", "load", "send", "account",
]  # fmt: skip
"""Every stage's name, in the data's order."""


@dataclass(frozen=True)
class Stage:
    """One stage: its name, whether it runs once per chunk (`per_chunk`) and talks to the
    service (`network`), the types its info may be (`info`: module:Class, None for none), and
    the display's words for it."""

    name: StageName
    info: tuple[str, ...]
    per_chunk: bool = False
    network: bool = False
    words: str | None = None

    @property
    def shown(self) -> str:
        """How a live display names the stage while the run is in it."""
        return self.words or self.name

    def info_types(self) -> tuple[type, ...]:
        """The types of its info, imported."""
        found: list[type] = []
        for name in self.info:
            if name == "None":
                found.append(type(None))
            else:
                module, _, attr = name.partition(":")
                found.append(getattr(importlib.import_module(module), attr))
        return tuple(found)


_P = "placeflow.pipeline."
STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("warehouse", ("None",), words="opening the warehouse"),
        Stage("read", (f"{_P}readstream:ReadInfo",)),
        Stage("normalize", (f"{_P}normalize:NormalizeInfo",)),
        Stage("dedupe", (f"{_P}dedupe:DedupeInfo",)),
        Stage("fresh", (f"{_P}fresh:FreshInfo",)),
        Stage("plan", (f"{_P}plan:PlanInfo",)),
        Stage("budget", ("builtins:str", "None", f"{_P}research.budget:Budget")),  # run; research
        Stage("open", ("None",)),
        Stage("submit", (f"{_P}submit:SubmitInfo", f"{_P}submit:Uncertain"), per_chunk=True,
              network=True, words="submitting jobs"),
        Stage("send-batch", (f"{_P}fetch:Fetched", f"{_P}submit:Uncertain"), per_chunk=True,
              network=True, words="sending batches"),
        Stage("poll", ("None",), network=True, words="waiting for the service's jobs"),
        Stage("fetch", (f"{_P}fetch:Fetched", "None"), per_chunk=True, network=True,
              words="downloading results"),
        Stage("load", (f"{_P}load:LoadInfo",), per_chunk=True, words="loading results"),
        Stage("send", (f"{_P}research.send:SendInfo",), network=True,
              words="sending research requests"),
        Stage("account", (f"{_P}account:RunSummary", "builtins:dict")),  # run; research
    )
}  # fmt: skip
"""Every stage, by name (`poll` is a generator over every job of the run: it yields their
statuses and keeps no info)."""

PER_CHUNK = frozenset(name for name, s in STAGES.items() if s.per_chunk)
"""Stages called once per chunk (a hundred calls each at a million rows)."""
NETWORK = frozenset(name for name, s in STAGES.items() if s.network)
"""Stages that talk to the service."""
WORDS = {name: s.shown for name, s in STAGES.items()}
"""How a live display names each stage while the run is in it."""

StageInfos = TypedDict(
    "StageInfos",
    {
        "read": "ReadInfo",
        "normalize": "NormalizeInfo",
        "dedupe": "DedupeInfo",
        "fresh": "FreshInfo",
        "plan": "PlanInfo",
        "budget": "str | Budget | None",
        "open": None,
        "submit": "list[SubmitInfo | Uncertain]",
        "send-batch": "list[Fetched | Uncertain]",
        "fetch": "list[Fetched | None]",
        "load": "list[LoadInfo]",
        "send": "SendInfo",
        "account": Any,  # a run's RunSummary (not kept in its own stages), a research's dict
    },
    total=False,
)
"""The infos of one invocation's stages, by name (a per-chunk stage's as a list of its
calls'): what `RunSummary.stages` and `Preview.stages` hold."""
