"""The sandbox's key specs (the CLI's --key) and fault settings parse strictly."""

from __future__ import annotations

import pytest

from placeflow.emulator import FaultConfig, parse_key_spec
from placeflow.emulator.settings import ENTITLEMENTS


def test_key_spec_with_every_option() -> None:
    """NAME:tier=..:credits=..:entitlements=..:status=.. sets each field."""
    spec = parse_key_spec("sk_a:tier=free:credits=250:entitlements=validation:status=revoked")
    assert (spec.key, spec.tier, spec.credits) == ("sk_a", "free", 250)
    assert spec.entitlements == ("validation",) and spec.status == "revoked"


def test_key_spec_defaults() -> None:
    """A bare name is a paid, active key with every entitlement."""
    spec = parse_key_spec("sk_b")
    assert spec.tier == "paid" and spec.entitlements == ENTITLEMENTS and spec.status == "active"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (":tier=paid", "no key name"),
        ("k:tier=gold", "tier must be free or paid"),
        ("k:credits=-5", "whole number"),
        ("k:credits", "name=value"),
        ("k:colour=red", "unknown key option"),
        ("k:entitlements=calls", "unknown entitlement"),
    ],
)
def test_key_spec_errors_say_what_is_wrong(text: str, message: str) -> None:
    """Each malformed spec is a ValueError that names the problem."""
    with pytest.raises(ValueError, match=message):
        parse_key_spec(text)


def test_unknown_fault_setting_is_refused() -> None:
    """A misspelt fault setting is an error, not silently ignored."""
    with pytest.raises(ValueError, match="unknown fault setting"):
        FaultConfig.from_dict({"error_500_rte": 0.1})
