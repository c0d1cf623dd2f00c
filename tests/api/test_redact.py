"""Redaction helpers: the key shows as its hint at most, wherever it might leak."""

from __future__ import annotations

import logging
import pickle

import pytest

from placeflow.support.redact import (
    REDACTED,
    RedactingFilter,
    Secret,
    key_hint,
    redact_headers,
    redact_text,
)

KEY = "sk_live_abcdefgh12345678"


def test_hint_is_last_four_characters() -> None:
    """A key's hint is an ellipsis and its last four characters, as the service's key_hint."""
    assert key_hint(KEY) == "…5678"


def test_short_secret_is_fully_redacted() -> None:
    """A secret too short to spare four characters shows nothing of itself."""
    assert key_hint("abc123") == REDACTED


def test_redact_text_replaces_every_occurrence() -> None:
    """Every occurrence of the key in a text becomes its hint."""
    text = f"key={KEY} again {KEY}"
    assert redact_text(text, [KEY]) == "key=…5678 again …5678"


def test_redact_headers_hides_credentials_only() -> None:
    """Credential headers are masked whatever their case; others are kept."""
    out = redact_headers({"X-API-Key": KEY, "authorization": "Bearer x", "Accept": "json"})
    assert out == {"X-API-Key": REDACTED, "authorization": REDACTED, "Accept": "json"}


def test_secret_repr_and_str_show_the_hint() -> None:
    """A Secret's repr, str and f-string show the hint; reveal() gives the value."""
    secret = Secret(KEY)
    assert KEY not in repr(secret) and KEY not in str(secret) and KEY not in f"{secret}"
    assert "…5678" in repr(secret)
    assert secret.reveal() == KEY


def test_secret_refuses_pickling() -> None:
    """A Secret cannot be pickled, so it cannot leak into a task cache or artifact."""
    with pytest.raises(TypeError):
        pickle.dumps(Secret(KEY))


def test_secret_needs_a_value() -> None:
    """An empty key is refused at construction."""
    with pytest.raises(ValueError, match="non-empty"):
        Secret("")


def test_logging_filter_scrubs_messages_and_args(caplog: pytest.LogCaptureFixture) -> None:
    """A record that would print the key, in its message or its arguments, prints the hint."""
    logger = logging.getLogger("placeflow.test.redact")
    caplog.handler.addFilter(RedactingFilter([KEY]))
    with caplog.at_level(logging.INFO, logger="placeflow.test.redact"):
        logger.info("sending %s", KEY)
        logger.info(f"inline {KEY}")
    assert KEY not in caplog.text
    assert caplog.text.count("…5678") == 2


def test_a_service_url_s_password_is_never_the_target_s_label() -> None:
    """PLACEFLOW_BASE_URL carrying a proxy's password (one holding "/" too): the target shown
    and recorded for the run names the user and host only."""
    from placeflow.runner.target import open_target
    from placeflow.support.redact import Secret

    url = "https://proxy:pa/ss#w@api.example.com/v1"
    with open_target(api_key=Secret("sk_live_abcdefgh1234"), base_url=url) as target:
        assert target.label == "https://proxy@api.example.com/v1"
        assert target.base_url == url  # the client still gets it whole
