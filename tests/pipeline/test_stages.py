"""The stage registry (`placeflow.pipeline.stages`) is the one list of stages: its names are the
StageName type's, the flows and the live display take theirs from it, and every info a run and a
research hand back (on a sandbox served on loopback) is of the type it declares."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import get_args

from placeflow.cli.progress import STAGE_WORDS
from placeflow.events import Event, StageFinished
from placeflow.flows.tasks import NETWORK_STAGES, PER_CHUNK
from placeflow.options import RunOptions
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.pipeline.stages import STAGES, StageInfos, StageName
from placeflow.runner.orchestrate import run
from placeflow.runner.research import ResearchOptions, research
from tests.sandbox_target import served

KEY = "sk_stage_registry_0000"


def test_the_registry_names_every_stage_once_and_the_others_read_it() -> None:
    """STAGES holds each StageName once, in the data's order; the flows' per-chunk and network
    sets and the display's words are the registry's; StageInfos keys are registered stages."""
    assert list(STAGES) == list(get_args(StageName))
    assert {n for n, s in STAGES.items() if s.per_chunk} == PER_CHUNK
    assert {n for n, s in STAGES.items() if s.network} == NETWORK_STAGES
    assert {n: s.shown for n, s in STAGES.items()} == STAGE_WORDS
    assert set(StageInfos.__annotations__) <= set(STAGES)
    assert all(s.info_types() for s in STAGES.values())  # every named type imports


def _places(path: Path, n: int) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "address", "city", "country"])
        w.writerows([f"u{i}", f"Cafe {i}", f"{i} Elm St", "Springfield", "USA"] for i in range(n))
    return path


def _check(events: list[Event]) -> set[str]:
    """Each finished stage's info is of a type its registry entry declares; the stages seen."""
    seen = set()
    for e in events:
        if isinstance(e, StageFinished):
            assert isinstance(e.info, STAGES[e.stage].info_types()), (e.stage, type(e.info))
            seen.add(e.stage)
    return seen


def test_a_run_and_a_research_hand_back_the_infos_the_registry_declares(tmp_path: Path) -> None:
    """A run of 12 places (synchronous batches) and a research of 3: every StageFinished info
    is of its stage's declared type, and the stages of both orders were seen."""
    db, events = tmp_path / "wh.duckdb", list[Event]()
    with served(KEY) as (_, target):
        places = _places(tmp_path / "p.csv", 12)
        summary = run([str(places)], options=RunOptions(mode="validate"), db=db, target=target,
                      on_event=events.append)  # fmt: skip
        assert summary.status == "completed"
        assert _check(events) >= {"read", "normalize", "dedupe", "fresh", "plan", "account"}
        assert set(summary.stages) <= set(STAGES)
        events.clear()
        spec = ResearchSpec(build_specs(("owner_person",)))
        inputs = [str(_places(tmp_path / "r.csv", 3))]
        out = research(inputs, ResearchOptions(spec=spec), target=target, db=db,
                       sleep=lambda s: None, on_event=events.append)  # fmt: skip
        assert out.status == "completed" and out.research is not None, out
        assert _check(events) >= {"fresh", "plan", "budget", "open", "send", "account"}
