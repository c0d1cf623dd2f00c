"""Free text a server supplies (error messages, notes, summaries) is stored and shown, so it is
capped: a service or a proxy can send a string of any size; and what is printed on a terminal
is made `printable` (no escape sequences or bidi overrides from a server, a file name or a
proxy's error page reach the terminal as instructions)."""

from __future__ import annotations

import logging
import re
from typing import Annotated, Any

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


def cap_strings(value: Any) -> Any:
    """`value` (parsed JSON: dicts, lists, scalars) with every string in it, keys aside, capped
    by `cap_text`: a server's structured answer (a research value, an identity block) stored
    as JSON keeps its shape, and no string in it is longer than MAX_SERVER_TEXT."""
    if isinstance(value, str):
        return cap_text(value)
    if isinstance(value, dict):
        return {k: cap_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [cap_strings(v) for v in value]
    return value


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters (escape sequences start with one) and bidi overrides; tab and newline
are kept."""


def printable(value: str) -> str:
    """`value` for a terminal: each control character and bidi override shown as U+FFFD."""
    return _UNPRINTABLE.sub("\ufffd", value)


class PrintableRecords(logging.Filter):
    """A logger's records made `printable` (the message formatted first, and the traceback of
    an exception logged with it): what they quote of a server (a job id, an error's text)
    reaches a terminal or Prefect's log as text only."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # the handler's own formatting reports it, as without the filter
            return True
        shown = printable(message)
        if shown != message:
            record.msg, record.args = shown, ()
        if record.exc_info and not record.exc_text:  # what a formatter would write, made now
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = printable(record.exc_text)
        if record.stack_info:
            record.stack_info = printable(record.stack_info)
        return True


_TRACEBACKS = logging.Formatter()


def printable_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)` with a `PrintableRecords` filter (added once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, PrintableRecords) for f in logger.filters):
        logger.addFilter(PrintableRecords())
    return logger
