"""Where a flow's export credentials come from, and what becomes of a password given where it
must not be.

The PostgreSQL password of `export_to` comes from a Prefect Secret block named by the flow
parameter `pg_password_block`, else from PGPASSWORD in the worker's environment (read by
`placeflow.config`). Never from `export_to` itself: Prefect stores a flow run's parameters in its
database and shows them in its UI. So `export_to` carries `SAFE_DESTINATION_PATTERN` in the
flow's parameter schema, and a Prefect server (which enforces a deployment's schema) refuses to
create a flow run whose `export_to` holds a password: it is never stored. A flow run that starts
with one all the same (schema enforcement off, or the flow called directly) is refused before
anything is done, and its stored parameters are rewritten without the password first.
"""

from __future__ import annotations

from typing import Annotated, cast

from pydantic import Field

from placeflow.config import postgres_password
from placeflow.errors import ConfigError, PasswordInUrl
from placeflow.exporters.destination import (
    SAFE_DESTINATION_PATTERN,
    refuse_password,
    without_password,
)
from placeflow.support.redact import Secret

ExportTo = Annotated[
    str | None,
    Field(
        description=(
            "Where a completed run ends with an incremental export: a directory, file://,"
            " delta:// or postgresql:// URL, never with a password (see pg_password_block)."
        ),
        json_schema_extra={"pattern": SAFE_DESTINATION_PATTERN},
    ),
]
"""The flows' `export_to` parameter: a destination whose password a Prefect server refuses."""


def _scrub_stored_parameters(export_to: str) -> None:
    """Rewrite this flow run's parameters, as the Prefect server stores them, without the
    password of `export_to` (nothing to do outside a flow run)."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    with get_client(sync_client=True) as client:
        stored = dict(client.read_flow_run(context.flow_run.id).parameters)
        stored = {
            k: without_password(v) if isinstance(v, str) and v == export_to else v
            for k, v in stored.items()
        }
        client.update_flow_run(context.flow_run.id, parameters=stored)


def export_password(export_to: str | None, pg_password_block: str | None) -> Secret | None:
    """The password for `export_to`: the Secret block's value, else PGPASSWORD. A password in
    `export_to` is refused (`PasswordInUrl`, exit code 2), the stored parameters scrubbed."""
    if export_to is None:
        return None
    try:
        refuse_password(export_to)
    except PasswordInUrl:
        _scrub_stored_parameters(export_to)
        raise
    if not pg_password_block:
        return postgres_password()
    from prefect.blocks.system import Secret as SecretBlock

    try:
        # called from a sync flow, prefect's async_dispatch runs the blocking form, which
        # returns the block itself (not the coroutine its annotation also allows)
        block = cast("SecretBlock[str]", SecretBlock.load(pg_password_block))
    except ValueError:
        raise ConfigError(
            f"no Prefect Secret block named {pg_password_block!r} (pg_password_block): create"
            " it in the UI (Blocks, Secret) or with prefect.blocks.system.Secret(value=...)"
            f".save({pg_password_block!r})"
        ) from None
    return Secret(str(block.get()))
