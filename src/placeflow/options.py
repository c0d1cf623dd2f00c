"""What a run does: one options model, from which the CLI's flags, the flow's parameters and the
`options` JSON stored with each run are all derived (adding an option is one edit, here).

Each field's `description` is its CLI help; `json_schema_extra` may rename its flag (`flag`),
give a `metavar`, keep it off `placeflow estimate` (`estimate: False`) or off the command line
(`cli: False`: the CLI sets it itself), or out of the run's identity (`identity: False`: how to
wait, not what to do). `attributes` also takes the CLI's
``a,b,c`` text, `mapping` its repeated ``FIELD=COLUMN`` pairs and `constants` its repeated
``FIELD=VALUE`` ones (`--set`), read by `placeflow.fields` (`mapping_pairs`, `constant_pairs`);
`max_age_days` a duration (`placeflow.support.durations`, whose names this module passes on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
)
from pydantic_core import ErrorDetails

from placeflow.errors import OptionsError
from placeflow.fields import (
    ALLOWED_ENRICH_ATTRIBUTES,
    BATCH_ROWS,
    DEFAULT_ENRICH_ATTRIBUTES,
    DEFAULT_MATCH_THRESHOLD,
    MAPPABLE,
    MAX_JOB_ROWS,
    SETTABLE,
    DedupeMode,
    JobKind,
    constant_pairs,
    mapping_pairs,
)
from placeflow.support.durations import DURATION_HELP, duration_days, parse_duration

Route = Literal["auto", "sync", "job"]
SEPARATOR_NEVER = frozenset('"\r\n')
"""Characters that cannot separate values: the quote, and the line breaks that end records."""


class RunOptions(BaseModel):
    """What a run does, as given on the command line, to the flow or to `placeflow.run`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: JobKind = Field(
        default="enrich",
        description="validate (existence and status) or enrich (attributes); default enrich",
    )
    attributes: tuple[str, ...] = Field(
        default=(),
        description="enrich attributes (default: opening_hours, phone, website, existence,"
        " open_closed)",
        json_schema_extra={"metavar": "a,b,..."},
        validate_default=True,
    )
    include_summary: bool = Field(default=False, description="also ask for a place summary")
    max_credits: int | None = Field(
        default=None,
        description="refuse to start if the run could cost more than N credits",
        json_schema_extra={"metavar": "N"},
    )
    max_age_days: float = Field(
        default=30.0,
        description="places with an outcome younger than this are not sent again: a duration,"
        f" {DURATION_HELP} (default 30d)",
        json_schema_extra={"flag": "--max-age", "metavar": "DURATION", "duration": True},
    )
    force: bool = Field(default=False, description="send fresh places again")
    retry_failed: bool = Field(
        default=False,
        description="send again places that failed 3 times in a row (held back otherwise)",
    )
    dedupe: DedupeMode = Field(
        default="fuzzy",
        description="fuzzy: the exact place_key, then probabilistic matching of the places,"
        " within the inputs and against places already in the warehouse (default); exact: the"
        " place_key only; off: every row is sent",
    )
    match_threshold: float = Field(
        default=DEFAULT_MATCH_THRESHOLD,
        description="match probability the fuzzy dedupe needs to merge two places, above 0 and"
        " at most 1 (default 0.99)",
        json_schema_extra={"metavar": "P", "identity": "when set"},
    )
    ids_may_repeat_places: bool = Field(
        default=False,
        description="an input file may hold one place twice under different ids (by default"
        " two rows of one file with different ids are never merged: a directory's own ids are"
        " its authority)",
        json_schema_extra={"identity": "when set"},
    )
    route: Route = Field(
        default="auto",
        description="synchronous calls, bulk jobs, or whichever takes fewer requests (auto)",
    )
    chunk_rows: int = Field(
        default=MAX_JOB_ROWS,
        description="places per bulk job, 1 to 10,000 (default 10,000)",
        json_schema_extra={"metavar": "N"},
    )
    mapping: tuple[tuple[str, str], ...] = Field(
        default=(),
        description="take a place field from a column (repeatable), e.g. poi_name='Store Name';"
        " FIELD= (no column) leaves a field out, even a column recognised by its name;"
        " FILE:FIELD=COLUMN applies to that input file only. Fields: " + ", ".join(MAPPABLE),
        json_schema_extra={"flag": "--map", "metavar": "[FILE:]FIELD=COLUMN"},
    )
    constants: tuple[tuple[str, str], ...] = Field(
        default=(),
        description="give a place field one value for every row (repeatable), e.g. country=FR"
        " for a file without a country column; it replaces any column of that field;"
        " FILE:FIELD=VALUE, for that input file only (its path, name or s3:// URL). Fields: "
        + ", ".join(SETTABLE),
        json_schema_extra={"flag": "--set", "metavar": "[FILE:]FIELD=VALUE",
                           "identity": "when set"},
    )  # fmt: skip
    without_address: bool = Field(
        default=False,
        description="send a file whose mapping gives a name but no address while columns that"
        " look like one (adresse, commune, code_postal, ...) are ignored: refused otherwise",
        json_schema_extra={"identity": False},
    )
    encoding: str = Field(default="utf8", description="input text encoding (default utf8)")
    separator: str | None = Field(
        default=None,
        description="the character between values in CSV inputs, e.g. ';' (Excel in many"
        " locales), '|' or tab ('\\t' or 'tab'); by default tab for .tsv and .tab files, else"
        " the one of ; tab | a header line without commas holds, else ','",
        json_schema_extra={"metavar": "CHAR", "identity": "when set"},
    )
    batch_rows: int = Field(
        default=BATCH_ROWS,
        ge=1,
        description="input rows read and normalised at a time (default 200,000): a run holds"
        " a few batches in memory, whatever the input's size",
        json_schema_extra={"metavar": "N", "identity": False},
    )
    poll_timeout: float = Field(
        default=3600.0,
        description="seconds to wait for bulk jobs before cancelling them (default 3600)",
        json_schema_extra={"metavar": "SECONDS", "estimate": False, "identity": False},
    )
    stuck_after: float = Field(
        default=600.0,
        description="seconds a running job's progress may stand still before it is taken as"
        " stuck, cancelled and its processed rows loaded (default 600)",
        json_schema_extra={"metavar": "SECONDS", "estimate": False, "identity": False},
    )
    idempotency_window: float = Field(
        default=60.0,
        description="seconds after a job POST whose answer was lost during which it is"
        " replayed under its Idempotency-Key (default 60). A lost answer is first replayed at"
        " once, a few times 20 ms apart; past those tries the key's usage is asked whether the"
        " POST created a job before every further re-send, and the job that answers is judged"
        " the original or new work billed twice (booked and said: exit 5). Past the window it"
        " is sent again only where the usage shows it created no job, else held as uncertain;"
        " a resume replays a lost POST within it",
        json_schema_extra={"metavar": "SECONDS", "estimate": False, "identity": False},
    )
    warehouse_wait: float = Field(
        default=120.0,
        description="seconds to wait for another process to let go of the warehouse before"
        " refusing (default 120; a run holds it only while writing)",
        json_schema_extra={"metavar": "SECONDS", "estimate": False, "identity": False},
    )
    claim_wait: float = Field(
        default=600.0,
        description="seconds to wait, once its own work is done, for places another"
        " unfinished run is buying (claimed) to be answered by it (default 600); the rest"
        " are answered when that run loads them",
        json_schema_extra={"metavar": "SECONDS", "estimate": False, "identity": False},
    )
    resend_uncertain: bool = Field(
        default=False,
        description="send again chunks whose earlier request may have been charged without"
        " its answer (accepts paying twice)",
        json_schema_extra={"estimate": False, "identity": False},
    )
    watch_every: float | None = Field(
        default=None,
        description="seconds at most between two polls while jobs run, so that a live display"
        " shows the service's progress within a job (default: none; the CLI sets it on a"
        " terminal from the key's limits, `placeflow.cli.progress.watch_every`)",
        json_schema_extra={"estimate": False, "identity": False, "cli": False},
    )

    @field_validator("attributes", mode="before")
    @classmethod
    def _split_attributes(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(a.strip() for a in value.split(",") if a.strip())
        return () if value is None else value

    @field_validator("attributes")
    @classmethod
    def _check_attributes(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(ALLOWED_ENRICH_ATTRIBUTES))
        if unknown:
            allowed = ", ".join(ALLOWED_ENRICH_ATTRIBUTES)
            raise OptionsError(f"unknown attribute(s) {', '.join(unknown)}; allowed: {allowed}")
        if len(value) > 9:
            raise OptionsError("at most 9 attributes")
        if info.data.get("mode") == "validate":
            if value:
                raise OptionsError("--attributes and --include-summary apply to --mode enrich only")
            return ()
        chosen = value or DEFAULT_ENRICH_ATTRIBUTES  # stored as the service will answer them
        return tuple(a for a in ALLOWED_ENRICH_ATTRIBUTES if a in chosen)

    @field_validator("include_summary")
    @classmethod
    def _summary_for_enrich(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("mode") == "validate":
            raise OptionsError("--attributes and --include-summary apply to --mode enrich only")
        return value

    @field_validator("max_credits")
    @classmethod
    def _credits(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise OptionsError("--max-credits must be 0 or more")
        return value

    @field_validator("match_threshold")
    @classmethod
    def _threshold(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise OptionsError("--match-threshold must be above 0 and at most 1")
        return value

    @field_validator("max_age_days", mode="before")
    @classmethod
    def _age_text(cls, value: object) -> object:
        """`--max-age 2w`: the one duration syntax (a bare number is days)."""
        if isinstance(value, str):
            return duration_days(value)
        return value

    @field_validator("max_age_days")
    @classmethod
    def _age(cls, value: float) -> float:
        if value < 0:
            raise OptionsError("--max-age must be 0 or more days")
        return value

    @field_validator("chunk_rows")
    @classmethod
    def _chunk(cls, value: int) -> int:
        if not 1 <= value <= MAX_JOB_ROWS:
            raise OptionsError(f"chunk rows must be 1 to {MAX_JOB_ROWS:,}")
        return value

    @field_validator(
        "poll_timeout", "stuck_after", "idempotency_window", "warehouse_wait", "claim_wait"
    )
    @classmethod
    def _timeout(cls, value: float, info: ValidationInfo) -> float:
        if value < 0 or (value == 0 and info.field_name != "claim_wait"):
            flag = "--" + str(info.field_name).replace("_", "-")
            least = "0 or more" if info.field_name == "claim_wait" else "more than 0"
            raise OptionsError(f"{flag} must be {least} seconds")
        return value

    @field_validator("watch_every")
    @classmethod
    def _watch(cls, value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise OptionsError("watch_every must be more than 0 seconds (or None)")
        return value

    @field_validator("separator")
    @classmethod
    def _separator(cls, value: str | None) -> str | None:
        if value is None:
            return None
        sep = "\t" if value.lower() in ("tab", "\\t") else value
        if len(sep) != 1 or not sep.isascii() or sep.isalnum() or sep in SEPARATOR_NEVER:
            raise OptionsError(
                f"--separator takes one character such as ';', '|' or tab ('\\t'), not {value!r}"
                " (not a letter, digit, quote or line break)"
            )
        return sep

    @field_validator("mapping", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        return mapping_pairs(value)

    @field_validator("constants", mode="before")
    @classmethod
    def _constants(cls, value: Any) -> Any:
        return constant_pairs(value)

    @field_serializer("mapping", "constants")
    def _pairs_as_dict(self, value: tuple[tuple[str, str], ...]) -> dict[str, str]:
        return dict(value)

    # --- derived ------------------------------------------------------------------------------

    @property
    def effective_attributes(self) -> tuple[str, ...]:
        """The attributes asked for, in canonical order (none for validate)."""
        return self.attributes

    @property
    def signature(self) -> str:
        """Outcomes are interchangeable only between runs with the same signature."""
        summary = "summary" if self.include_summary else "no-summary"
        return f"{self.mode}|{','.join(self.attributes)}|{summary}"

    def stored_json(self) -> str:
        """The `runs.options` text: every option, as `parse` reads it back."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)

    def identity_json(self) -> str:
        """What makes two run commands the same run (how long to wait does not)."""
        values = self.model_dump(mode="json", exclude=_identity(False))
        for name in _identity("when set"):
            value = values.get(name)
            if value in (None, {}) or value == RunOptions.model_fields[name].default:
                del values[name]
        return json.dumps(values, sort_keys=True)

    @classmethod
    def parse(cls, values: Mapping[str, Any] | str) -> RunOptions:
        """Options from plain values (or stored JSON); `OptionsError` names what is wrong."""
        try:
            if isinstance(values, str):
                return cls.model_validate_json(values)
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise OptionsError("; ".join(_reason(e) for e in exc.errors())) from None


def _reason(error: ErrorDetails) -> str:
    """Our own checks speak for themselves; pydantic's get the option's name in front."""
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "value_error":
        return message
    return f"{'.'.join(str(p) for p in error['loc'])}: {message}"


def option_extra(name: str) -> dict[str, Any]:
    """An option's `json_schema_extra` marks (flag, metavar, cli, estimate, identity)."""
    extra = RunOptions.model_fields[name].json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def _identity(marked: object) -> set[str]:
    """Options whose `identity` mark is `marked`: False (never part of a run's identity) or
    "when set" (part of it only when given another value than its default, so an option added
    later leaves the identity of a run made before it, and its resume, as it was)."""
    return {n for n in RunOptions.model_fields if option_extra(n).get("identity") == marked}


def split_options(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flat keyword arguments split into (options, the rest): for callers that mix them."""
    fields = set(RunOptions.model_fields)
    options = {k: v for k, v in params.items() if k in fields}
    return options, {k: v for k, v in params.items() if k not in fields}


__all__ = [
    "DURATION_HELP",
    "DedupeMode",
    "Route",
    "RunOptions",
    "duration_days",
    "option_extra",
    "parse_duration",
    "split_options",
]
