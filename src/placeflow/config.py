"""The one place that reads the environment and the configuration file.

`PLACEFLOW_API_KEY` and `PLACEFLOW_BASE_URL` select the real service; with no key, runs target
the embedded sandbox. `PLACEFLOW_TIER` (paid or free) sets the key's rate limits from the spec's
table, and `PLACEFLOW_RATE_LIMITS` (``10/s,100/min``) replaces them for a key with limits of its
own. `PLACEFLOW_DB` names the warehouse. Everything else is passed explicitly from here into the
library.

A configuration file in the working directory gives the same settings without the variables:
`placeflow.toml` (top-level keys), else the `[tool.placeflow]` table of `pyproject.toml`:

    db = "data/placeflow.duckdb"      # the warehouse (PLACEFLOW_DB, --db)
    base_url = "https://..."          # PLACEFLOW_BASE_URL
    tier = "paid"                     # PLACEFLOW_TIER
    rate_limits = "10/s,100/min"      # PLACEFLOW_RATE_LIMITS

A setting is taken from, first to last: the command's flag (`--db`), the environment variable,
the file, the default. The API key is never read from a file (a file is copied, committed and
shared): only from PLACEFLOW_API_KEY.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from placeflow.errors import ConfigError, OptionsError
from placeflow.fields import TIER_WINDOWS, RateLimits
from placeflow.support.objects import Storage
from placeflow.support.redact import Secret

DEFAULT_DB = "data/placeflow.duckdb"
"""Where runs land unless a flag, PLACEFLOW_DB or the configuration file says otherwise."""
CONFIG_FILE = "placeflow.toml"
"""The configuration file looked for in the working directory (before pyproject.toml)."""
FILE_KEYS = {
    "db": "PLACEFLOW_DB",
    "base_url": "PLACEFLOW_BASE_URL",
    "tier": "PLACEFLOW_TIER",
    "rate_limits": "PLACEFLOW_RATE_LIMITS",
}
"""What a configuration file may set, and the variable that overrides each."""

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
    db: str = DEFAULT_DB
    """The warehouse when no `--db` is given: PLACEFLOW_DB, the file's `db`, or DEFAULT_DB."""

    @property
    def uses_sandbox(self) -> bool:
        return self.api_key is None


def file_settings(cwd: Path | str | None = None) -> tuple[dict[str, str], str | None]:
    """The settings of the configuration file in `cwd` (the working directory): `placeflow.toml`,
    else `[tool.placeflow]` of `pyproject.toml`; and the file's name (None when there is none).
    An unknown key, a value that is not a string or a file that is not TOML is a `ConfigError`."""
    here = Path.cwd() if cwd is None else Path(cwd)
    own, project = here / CONFIG_FILE, here / "pyproject.toml"
    table: object
    if own.is_file():
        path, table = own, _toml(own)
    elif project.is_file():
        tool = _toml(project).get("tool")
        path, table = project, tool.get("placeflow") if isinstance(tool, dict) else None
        if table is None:
            return {}, None
    else:
        return {}, None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.placeflow] must be a table")
    unknown = sorted(set(table) - set(FILE_KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(FILE_KEYS)}"
            " (the API key is read from PLACEFLOW_API_KEY only)"
        )
    values: dict[str, str] = {}
    for name, value in table.items():
        if not isinstance(value, str):
            raise ConfigError(f"{path}: {name} must be a string, not {value!r}")
        values[str(name)] = value
    return values, str(path)


def _toml(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML file ({exc})") from None


def layered(env: Mapping[str, str] | None = None, cwd: Path | str | None = None) -> dict[str, str]:
    """The environment with the configuration file's settings under it: a variable set (and not
    blank) wins over the file's value of the same setting."""
    env = os.environ if env is None else env
    values, _ = file_settings(cwd)
    merged = dict(env)
    for name, value in values.items():
        variable = FILE_KEYS[name]
        if not env.get(variable, "").strip():
            merged[variable] = value
    return merged


def warehouse_path(
    flag: str | None = None, env: Mapping[str, str] | None = None, cwd: Path | str | None = None
) -> str:
    """The warehouse a command uses: `--db` when given, else PLACEFLOW_DB, else the file's
    `db`, else DEFAULT_DB."""
    if flag:
        return flag
    return layered(env, cwd).get("PLACEFLOW_DB", "").strip() or DEFAULT_DB


def load_settings(env: Mapping[str, str] | None = None, cwd: Path | str | None = None) -> Settings:
    """Read PLACEFLOW_API_KEY and PLACEFLOW_BASE_URL (blank counts as unset), PLACEFLOW_TIER,
    PLACEFLOW_RATE_LIMITS and PLACEFLOW_DB, each over the configuration file's value.

    A key needs the service's base URL: the spec gives it only as {base_url}, so there is no
    default to guess, and a key sent to a guessed host would be a leak.
    """
    env = layered(env, cwd)
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
    db = env.get("PLACEFLOW_DB", "").strip() or DEFAULT_DB
    return Settings(
        api_key=Secret(key) if key else None,
        base_url=base or None,
        limits=limits,
        storage=storage_settings(env),
        db=db,
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


def warehouse_db(db: str, env: Mapping[str, str] | None = None) -> str:
    """A flow's `db` as the worker opens it: a relative path is taken under PLACEFLOW_HOME
    (the warehouse host's placeflow folder, set in the worker's environment) when it is set,
    so that every worker and every deployment names the one warehouse whatever folder the
    flow run starts in; an absolute path, ``:memory:`` or no PLACEFLOW_HOME leave it as given."""
    env = os.environ if env is None else env
    home = env.get("PLACEFLOW_HOME", "").strip()
    if not home or db == ":memory:" or os.path.isabs(db):
        return db
    return os.path.join(os.path.expanduser(home), db)
