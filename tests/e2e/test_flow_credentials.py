"""A flow's export credentials on the session's Prefect server: a password in `export_to` refused
before the flow does anything, the flow run's stored parameters rewritten without it; the
password of a Secret block named in `pg_password_block`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from placeflow.errors import ConfigError
from placeflow.flows.credentials import export_password

LEAKY = "postgresql://etl:N0tForPrefect@127.0.0.1:9/analytics"
LEAKY_SLASH = "postgresql://etl:N0t/ForPrefect#?@127.0.0.1:9/analytics"
"""A password holding / # ?: Python's urlsplit sees none in it; libpq (and the guard) do."""


@pytest.mark.parametrize("leaky", [LEAKY, LEAKY_SLASH])
def test_a_password_in_export_to_fails_the_flow_before_anything(
    leaky: str, tmp_path: Path, prefect_api: str
) -> None:
    """refresh_stale_places given a password in export_to ends Failed with exit code 2 and the
    way to do it right; no warehouse is opened, and the server's copy of the flow run's
    parameters no longer holds the password."""
    from prefect.client.schemas.objects import State

    from placeflow.flows.refresh import refresh_stale_places

    db = tmp_path / "wh.duckdb"
    state: State[Any] = refresh_stale_places(  # type: ignore[assignment]  # sync call: a State
        db=str(db), export_to=leaky, return_state=True
    )
    assert state.is_failed()
    message = state.message or ""
    assert "PGPASSWORD" in message and "N0t" not in message and "ForPrefect" not in message
    assert not db.exists()
    flow_run = httpx.get(f"{prefect_api}/flow_runs/{state.state_details.flow_run_id}").json()
    assert flow_run["parameters"]["export_to"] == "postgresql://etl@127.0.0.1:9/analytics"


def test_a_secret_block_gives_the_password(
    prefect_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block named in pg_password_block wins over PGPASSWORD; an unknown name is a
    ConfigError naming it; without a block, PGPASSWORD."""
    from prefect.blocks.system import Secret

    Secret(value="from-the-block").save("test-warehouse-password", overwrite=True)
    monkeypatch.setenv("PGPASSWORD", "from-the-environment")
    dest = "postgresql://etl@127.0.0.1:9/analytics"
    found = export_password(dest, "test-warehouse-password")
    assert found is not None and found.reveal() == "from-the-block"
    env = export_password(dest, None)
    assert env is not None and env.reveal() == "from-the-environment"
    with pytest.raises(ConfigError, match="no-such-block"):
        export_password(dest, "no-such-block")
    assert export_password(None, "no-such-block") is None
