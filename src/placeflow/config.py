"""The one place that reads the environment.

`PLACEFLOW_API_KEY` and `PLACEFLOW_BASE_URL` select the real service; with no key, runs target
the embedded sandbox. `PLACEFLOW_TIER` (paid or free) sets the key's rate limits from the spec's
table, and `PLACEFLOW_RATE_LIMITS` (``10/s,100/min``) replaces them for a key with limits of its
own. Everything else is passed explicitly from here into the library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from placeflow.errors import ConfigError, OptionsError
from placeflow.fields import TIER_WINDOWS, RateLimits
from placeflow.support.objects import Storage
from placeflow.support.redact import Secret

PREFECT_DEFAULTS = {
    # Offline, Prefect's analytics send fails noisily; nothing here should phone home.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Prefect 3.8.8's task-run recorder logs "Error flushing events" tracebacks at shutdown of
    # the ephemeral server. Task states are still reported by the flow engine; what is lost is
    # the server-side event history of task runs, which placeflow does not use.
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    # The ephemeral server takes about 8 s to start (20 s the first time in a new
    # PREFECT_HOME); on a busy 2-core machine the default 20 s timeout is not enough.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
}


@dataclass(frozen=True)
class Settings:
    api_key: Secret | None
    base_url: str | None
    limits: RateLimits = field(default_factory=RateLimits)
    """The key's rate limits, kept by one limiter shared by every request of the process."""
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    storage: Storage = field(default_factory=Storage, repr=False)
    """Object storage (s3:// inputs and exports), from the standard AWS variables."""

    @property
    def uses_sandbox(self) -> bool:
        return self.api_key is None


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read PLACEFLOW_API_KEY and PLACEFLOW_BASE_URL (blank counts as unset).

    A key needs the service's base URL: the spec gives it only as {base_url}, so there is no
    default to guess, and a key sent to a guessed host would be a leak.
    """
    env = os.environ if env is None else env
    key = env.get("PLACEFLOW_API_KEY", "").strip()
    base = env.get("PLACEFLOW_BASE_URL", "").strip()
    if key and not base:
        raise ConfigError(
            "PLACEFLOW_API_KEY is set but PLACEFLOW_BASE_URL is not: set it to the"
            " service's base URL (or unset the key to use the embedded sandbox)"
        )
    tier = env.get("PLACEFLOW_TIER", "").strip().lower() or "paid"
    if tier not in TIER_WINDOWS:
        raise ConfigError(f"PLACEFLOW_TIER must be one of {', '.join(TIER_WINDOWS)}, not {tier!r}")
    custom = env.get("PLACEFLOW_RATE_LIMITS", "").strip()
    try:
        limits = RateLimits.parse(custom) if custom else RateLimits.for_tier(tier)
    except OptionsError as exc:
        raise ConfigError(f"PLACEFLOW_RATE_LIMITS: {exc}") from None
    return Settings(
        api_key=Secret(key) if key else None,
        base_url=base or None,
        limits=limits,
        storage=storage_settings(env),
    )


def storage_settings(env: Mapping[str, str] | None = None) -> Storage:
    """Object storage's settings from the standard AWS variables (blank counts as unset):
    AWS_ENDPOINT_URL (AWS_ENDPOINT_URL_S3 first), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    AWS_SESSION_TOKEN, AWS_REGION (else AWS_DEFAULT_REGION) and AWS_ALLOW_HTTP."""
    env = os.environ if env is None else env

    def get(*names: str) -> str | None:
        for name in names:
            value = env.get(name, "").strip()
            if value:
                return value
        return None

    secret, token = get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")
    return Storage(
        endpoint_url=get("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
        access_key_id=get("AWS_ACCESS_KEY_ID"),
        secret_access_key=Secret(secret) if secret else None,
        session_token=Secret(token) if token else None,
        region=get("AWS_REGION", "AWS_DEFAULT_REGION"),
        allow_http=(get("AWS_ALLOW_HTTP") or "").lower() in ("1", "true", "yes"),
    )


def apply_prefect_defaults(env: dict[str, str] | None = None) -> None:
    """Set Prefect's offline-friendly defaults unless the user set them (before importing it)."""
    target = os.environ if env is None else env
    for name, value in PREFECT_DEFAULTS.items():
        target.setdefault(name, value)


def in_ci(env: Mapping[str, str] | None = None) -> bool:
    """CI is set (and not 0/false): a build log, where no live display is drawn."""
    env = os.environ if env is None else env
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def prefect_server_url(env: Mapping[str, str] | None = None) -> str | None:
    """PREFECT_API_URL: set when flows run against a Prefect server of their own (a worker, a
    served deployment, `prefect server start`); unset under the ephemeral in-process one."""
    env = os.environ if env is None else env
    return env.get("PREFECT_API_URL", "").strip() or None


def postgres_password(env: Mapping[str, str] | None = None) -> Secret | None:
    """PGPASSWORD, for `placeflow export --to postgresql://...` when the URL carries none."""
    env = os.environ if env is None else env
    value = env.get("PGPASSWORD", "")
    return Secret(value) if value else None
