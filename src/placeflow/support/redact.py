"""Keeping the API key out of reprs, logs, error messages and artifacts.

The most that may ever appear of a key is its hint: the last four characters behind an
ellipsis (``…a1b2``), which is also what the service reports as ``key_hint``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import unquote

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


_URL_START: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
"""A URL's scheme and "://" (two characters or more: "C:/" is a drive, not a scheme)."""
_PASSWORD_KEY: Final = re.compile(r"^\s*password\s*$", re.IGNORECASE)


def _url_parts(url: str) -> tuple[str, str | None, str, str] | None:
    """(scheme://, userinfo or None, authority-and-path, query-and-fragment) of `url` read as
    libpq reads a URI, or None when it is no URL. The user info runs to the last "@" of what
    follows "://" (a password may hold "/", "?", "#" or "@", which Python's urlsplit takes for
    the path, query or fragment), unless that starts with "/" (no authority: a path)."""
    start = _URL_START.match(url)
    if start is None:
        return None
    head, rest = start.group(0), url[start.end() :]
    userinfo: str | None = None
    if not rest.startswith("/") and "@" in rest:
        userinfo, _, rest = rest.rpartition("@")
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    return head, userinfo, rest[:cut], rest[cut:]


def _query_params(tail: str) -> list[str]:
    """The parameters of a query-and-fragment tail, each as written ("key=value")."""
    return [p for p in re.split(r"[?&#]", tail) if p]


def _is_password_param(param: str) -> bool:
    key = unquote(param.partition("=")[0])
    return bool(_PASSWORD_KEY.match(key))


def url_has_password(url: str) -> bool:
    """Whether `url` may carry a password, read as libpq reads a connection URI: user info
    with a colon (``user:secret@``, an empty password too), or a ``password=`` parameter (its
    name percent-decoded, any case). A path or a plain string carries none."""
    parts = _url_parts(url)
    if parts is None:
        return False
    _, userinfo, _, tail = parts
    if userinfo is not None and ":" in userinfo:
        return True
    return any(_is_password_param(p) for p in _query_params(tail))


def url_without_password(url: str) -> str:
    """`url` with whatever may be a password taken out: the user info kept to its user name,
    and the query cut from its first ``password=`` parameter on (a value may hold "&"); the
    fragment dropped. A string that is no URL comes back as it is."""
    parts = _url_parts(url)
    if parts is None:
        return url
    head, userinfo, where, tail = parts
    user = "" if userinfo is None else userinfo.partition(":")[0]
    kept: list[str] = []
    for param in _query_params(tail.partition("#")[0]):
        if _is_password_param(param):
            break
        kept.append(param)
    query = f"?{'&'.join(kept)}" if kept else ""
    return f"{head}{user + '@' if user else ''}{where}{query}"
