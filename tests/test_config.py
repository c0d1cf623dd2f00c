"""The one place the environment is read: target, key and the key's rate limits."""

from __future__ import annotations

import pytest

from placeflow.config import load_settings
from placeflow.fields import RateLimits

KEY_ENV = {"PLACEFLOW_API_KEY": "sk_live_cfg_secret", "PLACEFLOW_BASE_URL": "https://api.test"}


def test_no_key_means_the_sandbox_at_the_paid_tier() -> None:
    """Without a key runs use the embedded sandbox, kept to the paid tier's limits."""
    settings = load_settings({})
    assert settings.uses_sandbox and settings.base_url is None
    assert settings.limits.windows == ((10, 1.0), (100, 60.0))


def test_free_tier_keeps_to_five_a_second_and_ten_a_minute() -> None:
    """PLACEFLOW_TIER=free selects the spec's free limits (any case, spaces ignored)."""
    settings = load_settings({**KEY_ENV, "PLACEFLOW_TIER": " Free "})
    assert settings.limits.windows == ((5, 1.0), (10, 60.0))


def test_custom_limits_replace_the_tier() -> None:
    """PLACEFLOW_RATE_LIMITS gives a key's own windows, in the spec's notation."""
    settings = load_settings({**KEY_ENV, "PLACEFLOW_RATE_LIMITS": "20/s, 500/min, 10000/h"})
    assert settings.limits.windows == ((20, 1.0), (500, 60.0), (10000, 3600.0))
    assert RateLimits.parse("3/5s").windows == ((3, 5.0),)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLACEFLOW_TIER": "gold"}, "PLACEFLOW_TIER must be one of free, paid"),
        ({"PLACEFLOW_RATE_LIMITS": "fast"}, "PLACEFLOW_RATE_LIMITS: rate limit 'fast'"),
        ({"PLACEFLOW_RATE_LIMITS": "0/s"}, "PLACEFLOW_RATE_LIMITS: window"),
    ],
)
def test_bad_limits_are_refused_with_the_variable_named(env: dict[str, str], message: str) -> None:
    """A tier or limits the library cannot use is refused, naming what to fix."""
    with pytest.raises(ValueError, match=message):
        load_settings({**KEY_ENV, **env})


def test_key_is_not_kept_in_clear_in_the_settings_repr() -> None:
    """The settings' repr shows at most the key's last four characters."""
    text = repr(load_settings(KEY_ENV))
    assert "sk_live_cfg_secret" not in text and "cret" in text


def test_object_storage_is_configured_by_the_standard_aws_variables() -> None:
    """AWS_ENDPOINT_URL (AWS_ENDPOINT_URL_S3 first), the key pair, the region (AWS_REGION, else
    AWS_DEFAULT_REGION) and AWS_ALLOW_HTTP; the secret never shows in a repr; a plain-http
    endpoint without AWS_ALLOW_HTTP is refused when a file system is asked for."""
    import pytest

    from placeflow.config import storage_settings
    from placeflow.errors import OptionsError

    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "AKIATEST",
        "AWS_SECRET_ACCESS_KEY": "very-secret-value",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ALLOW_HTTP": "true",
    }
    storage = storage_settings(env)
    assert (storage.endpoint_url, storage.region, storage.allow_http) == (
        "http://127.0.0.1:9000", "eu-west-1", True
    )  # fmt: skip
    assert "very-secret-value" not in repr(storage)
    options = storage.delta_options()
    assert options["conditional_put"] == "etag" and options["AWS_ALLOW_HTTP"] == "true"
    assert storage_settings({**env, "AWS_ENDPOINT_URL_S3": "http://s3.local"}).endpoint_url == (
        "http://s3.local"
    )
    with pytest.raises(OptionsError, match="AWS_ALLOW_HTTP"):
        storage_settings({**env, "AWS_ALLOW_HTTP": ""}).filesystem("s3")
    assert storage_settings({}).endpoint_url is None
