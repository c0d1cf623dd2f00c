"""Keeping the API key out of reprs, logs, error messages and artifacts.

The most that may ever appear of a key is its hint: the last four characters behind an
ellipsis (``…a1b2``), which is also what the service reports as ``key_hint``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from placeflow.errors import OptionsError, SecretRefused

REDACTED: Final = "***"
SENSITIVE_HEADERS: Final = frozenset(
    {"x-api-key", "authorization", "proxy-authorization", "cookie"}
)
_HINT_CHARS: Final = 4
_MIN_SECRET_LEN: Final = 8
"""Secrets shorter than this are shown fully redacted: their last four characters say too much."""


def key_hint(key: str) -> str:
    """The redacted form of a key: ``…`` and its last four characters (``***`` if short)."""
    if len(key) < _MIN_SECRET_LEN:
        return REDACTED
    return "…" + key[-_HINT_CHARS:]


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of every secret replaced by that secret's hint."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, key_hint(secret))
    return text


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of `headers` that is safe to log: credential headers are replaced by ``***``."""
    return {
        name: (REDACTED if name.lower() in SENSITIVE_HEADERS else value)
        for name, value in headers.items()
    }


class Secret:
    """A string that does not show itself: its repr and str are the hint, never the value.

    Call :meth:`reveal` at the one place the value is needed (the request header).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise OptionsError("a secret must be a non-empty string")
        self._value = value

    def reveal(self) -> str:
        return self._value

    @property
    def hint(self) -> str:
        return key_hint(self._value)

    def __repr__(self) -> str:
        return f"Secret({self.hint!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> Any:
        raise SecretRefused(
            "a Secret cannot be pickled; pass the key explicitly where it is needed"
        )


class RedactingFilter(logging.Filter):
    """A logging filter that replaces secrets in a record's message and arguments by their hint.

    Attach it to a handler (``handler.addFilter(RedactingFilter([key]))``) so that nothing a
    library logs, ours or a dependency's, can print the key.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_text(message, self._secrets)
        if redacted != message:
            record.msg = redacted
            record.args = None
        return True
