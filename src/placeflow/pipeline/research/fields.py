"""The attributes a research run asks for: from ``--field``/``--describe`` or a YAML/JSON file.

    --field owner_person --field cuisine:enum:italian|thai|other --field has_patio:bool
    --describe has_patio="Outdoor seating the public can use"
    --fields fields.yaml   # a list of {name, description, value_type, allowed_values},
                           # or a mapping name -> {description, value_type, allowed_values}

Every spec is held to the spec's limits before anything is sent: 1 to 20 attributes, names 1 to
100 characters and unique, descriptions at most 500, value types bool/enum/string/number, and
allowed values only (and always) for an enum. `field_signature` names a field's spec: an answer
is reused (fresh) only for the same name, type, allowed values, description and identity flag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; safe_load only
from pydantic import ValidationError

from placeflow.api.models import MAX_RESEARCH_ATTRIBUTES, DeepResearchFieldSpec
from placeflow.errors import UsageError

VALUE_TYPES = ("bool", "enum", "string", "number")
MAX_NAME = 100
MAX_DESCRIPTION = 500
RESERVED = ("existence",)
"""`existence` is the attribute validate_existence adds to every row."""


class FieldSpecError(UsageError, ValueError):
    """An attribute spec breaks the spec's limits; nothing was sent."""


def parse_field(text: str) -> DeepResearchFieldSpec:
    """``NAME[:TYPE[:ALLOWED|...]]`` as one DeepResearchFieldSpec."""
    name, _, rest = text.partition(":")
    kind, _, allowed = rest.partition(":")
    values = [v.strip() for v in allowed.split("|")] if allowed else None
    return make_spec(name.strip(), value_type=kind.strip() or None, allowed_values=values)


def make_spec(
    name: str,
    *,
    description: str | None = None,
    value_type: str | None = None,
    allowed_values: Sequence[str] | None = None,
) -> DeepResearchFieldSpec:
    if not 1 <= len(name) <= MAX_NAME:
        raise FieldSpecError(f"field name {name!r} must be 1 to {MAX_NAME} characters")
    if name in RESERVED:
        raise FieldSpecError(f"field name {name!r} is reserved (use --validate-existence)")
    if value_type is not None and value_type not in VALUE_TYPES:
        raise FieldSpecError(
            f"field {name}: type {value_type!r} is not one of {', '.join(VALUE_TYPES)}"
        )
    allowed = [v for v in allowed_values or [] if v] or None
    if value_type == "enum" and not allowed:
        raise FieldSpecError(f"field {name}: an enum needs allowed values (NAME:enum:a|b|c)")
    if allowed and value_type not in (None, "enum"):
        raise FieldSpecError(f"field {name}: allowed values apply to enum fields only")
    if allowed and len(set(allowed)) != len(allowed):
        raise FieldSpecError(f"field {name}: allowed values repeat")
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise FieldSpecError(f"field {name}: description is over {MAX_DESCRIPTION} characters")
    try:
        return DeepResearchFieldSpec(
            name=name,
            description=description or None,
            value_type=cast(Any, "enum" if allowed else value_type),  # checked above
            allowed_values=allowed,
        )
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise FieldSpecError(f"field {name}: {first['msg']}") from None


def _from_file(path: Path) -> list[DeepResearchFieldSpec]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FieldSpecError(f"--fields {path}: {exc.strerror or exc}") from None
    try:
        data: Any = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise FieldSpecError(f"--fields {path}: not valid JSON/YAML ({exc})") from None
    if isinstance(data, Mapping) and "fields" in data and len(data) == 1:
        data = data["fields"]
    if isinstance(data, Mapping):
        data = [{"name": k, **(v or {})} for k, v in data.items()]
    if not isinstance(data, list) or not all(isinstance(d, Mapping) for d in data):
        raise FieldSpecError(
            f"--fields {path}: expected a list of {{name, description, value_type,"
            " allowed_values}} or a mapping of name to those"
        )
    specs = []
    for item in data:
        unknown = set(item) - {"name", "description", "value_type", "type", "allowed_values"}
        if unknown:
            raise FieldSpecError(f"--fields {path}: unknown key(s) {sorted(unknown)}")
        allowed = item.get("allowed_values")
        if allowed is not None and not isinstance(allowed, list):
            raise FieldSpecError(f"--fields {path}: allowed_values must be a list")
        specs.append(
            make_spec(
                str(item.get("name") or ""),
                description=item.get("description"),
                value_type=item.get("value_type") or item.get("type"),
                allowed_values=[str(v) for v in allowed] if allowed else None,
            )
        )
    return specs


def build_specs(
    fields: Sequence[str] = (),
    describe: Sequence[str] = (),
    fields_file: str | Path | None = None,
) -> tuple[DeepResearchFieldSpec, ...]:
    """The run's attributes in order: the file's first, then each --field; --describe fills in
    descriptions by name."""
    specs = _from_file(Path(fields_file)) if fields_file else []
    specs += [parse_field(f) for f in fields]
    descriptions: dict[str, str] = {}
    for pair in describe:
        name, sep, text = pair.partition("=")
        if not sep:
            raise FieldSpecError(f'--describe takes NAME="text", not {pair!r}')
        text = text.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]  # NAME="..." passed through a shell that kept the quotes
        descriptions[name.strip()] = text
    names = [s.name for s in specs]
    unknown = sorted(set(descriptions) - set(names))
    if unknown:
        raise FieldSpecError(f"--describe names no --field: {', '.join(unknown)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise FieldSpecError(f"field(s) given twice: {', '.join(repeated)}")
    if not 1 <= len(specs) <= MAX_RESEARCH_ATTRIBUTES:
        raise FieldSpecError(
            f"give 1 to {MAX_RESEARCH_ATTRIBUTES} fields (--field or --fields), not {len(specs)}"
        )
    return tuple(
        make_spec(
            s.name,
            description=descriptions.get(s.name, s.description),
            value_type=s.value_type,
            allowed_values=s.allowed_values,
        )
        for s in specs
    )


def field_signature(spec: DeepResearchFieldSpec, *, verify_identity: bool) -> str:
    """A short hash of what makes two answers of a field interchangeable."""
    text = json.dumps(
        [spec.model_dump(mode="json"), bool(verify_identity)], sort_keys=True, ensure_ascii=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]
