"""Free text a server supplies (error messages, notes, summaries) is stored and shown, so it is
capped: a service or a proxy can send a string of any size."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

MAX_SERVER_TEXT = 2_000
"""Characters of a server-supplied message kept; the rest is cut and marked."""


def cap_text(value: str, limit: int = MAX_SERVER_TEXT) -> str:
    """`value` cut to `limit` characters, marked with how many were dropped: a service (or a
    proxy) can send an error string of any size, and it is stored and shown."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… [truncated {len(value) - limit:,} characters]"


CappedText = Annotated[str, AfterValidator(cap_text)]
"""A server-supplied free-text string, capped at `MAX_SERVER_TEXT` characters."""
