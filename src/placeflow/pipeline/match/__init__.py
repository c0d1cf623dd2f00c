"""Fuzzy matching: the probabilistic second dedupe pass after the exact place_key (Splink)."""

from placeflow.pipeline.match.engine import (
    DEFAULT_THRESHOLD,
    OUTPUT_SCHEMA,
    RULE,
    MatchInfo,
    fuzzy_match,
    fuzzy_match_batches,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "OUTPUT_SCHEMA",
    "RULE",
    "MatchInfo",
    "fuzzy_match",
    "fuzzy_match_batches",
]
