"""Attribute specs from --field, --describe and a YAML/JSON file, held to the spec's limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from placeflow.pipeline.research.fields import FieldSpecError, build_specs, field_signature


def test_field_forms_give_typed_specs() -> None:
    """NAME, NAME:TYPE and NAME:enum:A|B become specs, with --describe filling descriptions."""
    specs = build_specs(
        ["owner_person", "has_patio:bool", "price:enum:$|$$|$$$"], ['has_patio="Outdoor seats"']
    )
    assert [s.name for s in specs] == ["owner_person", "has_patio", "price"]
    assert specs[1].value_type == "bool" and specs[1].description == "Outdoor seats"
    assert specs[2].value_type == "enum" and specs[2].allowed_values == ["$", "$$", "$$$"]


def test_fields_file_yaml_and_json(tmp_path: Path) -> None:
    """A YAML mapping and a JSON list give the same specs, before the --field ones."""
    yml = tmp_path / "f.yaml"
    yml.write_text("cuisine:\n  value_type: enum\n  allowed_values: [thai, other]\nowner_org: {}\n")
    js = tmp_path / "f.json"
    js.write_text('[{"name": "cuisine", "value_type": "enum", "allowed_values": ["thai", "other"]},'
                  ' {"name": "owner_org"}]')  # fmt: skip
    assert build_specs(["vegan:bool"], (), yml) == build_specs(["vegan:bool"], (), js)
    assert [s.name for s in build_specs(["vegan:bool"], (), yml)] == [
        "cuisine", "owner_org", "vegan"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "describe", "says"),
    [
        ([], [], "1 to 20"),
        ([f"f{i}" for i in range(21)], [], "1 to 20"),
        (["a" * 101], [], "1 to 100"),
        (["x:colour"], [], "not one of"),
        (["x:enum"], [], "needs allowed values"),
        (["x:bool:a|b"], [], "enum fields only"),
        (["x", "x"], [], "given twice"),
        (["existence"], [], "reserved"),
        (["x"], ["y=text"], "names no --field"),
        (["x"], ["x=" + "d" * 501], "over 500"),
    ],
)
def test_specs_outside_the_limits_are_refused(
    fields: list[str], describe: list[str], says: str
) -> None:
    """Every limit of the spec is checked before anything is sent, naming what is wrong."""
    with pytest.raises(FieldSpecError, match=says):
        build_specs(fields, describe)


def test_signature_changes_with_the_spec_and_identity_flag() -> None:
    """Answers are interchangeable only for the same spec and identity flag."""
    a, b = build_specs(["x:bool"]), build_specs(["x:string"])
    assert field_signature(a[0], verify_identity=False) != field_signature(
        b[0], verify_identity=False
    )
    assert field_signature(a[0], verify_identity=False) != field_signature(
        a[0], verify_identity=True
    )
    assert field_signature(a[0], verify_identity=True) == field_signature(
        build_specs(["x:bool"])[0], verify_identity=True
    )
