"""`--set FIELD=VALUE` (issue 37): a file with no country column given one constant country;
the value in every row, no column looked for, said in the input report, part of the run's
identity only when given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placeflow.cli.main import build_parser
from placeflow.cli.options import options_from_args
from placeflow.errors import InputError, OptionsError
from placeflow.options import RunOptions
from placeflow.pipeline.mapping_report import describe, input_report
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.read import read_inputs

from .conftest import WriteFile

FRENCH = "nom,adresse,ville,lat,lon\nCafé A,1 rue Lepic,Paris,48.8848,2.3336\nB,,Lyon,,\n"
"""A French file without a country column (its names are recognised: `lat`, `lon`; the
French headers are mapped)."""
MAP = {"poi_name": "nom", "street": "adresse", "city": "ville"}


def test_set_gives_every_row_the_value(write_file: WriteFile) -> None:
    """--set country=FR: each row's country is FR, and the normalised places are French (their
    coordinates checked against France, kept)."""
    path = write_file(FRENCH)
    rows, info = read_inputs([str(path)], mapping=MAP, constants={"country": "FR"})
    assert rows.get_column("country").to_list() == ["FR", "FR"]
    assert info.constants == {"country": "FR"}
    places, rejects, _ = normalize(rows)
    assert rejects.height == 0
    assert places.select("country", "latitude").rows() == [("FR", 48.8848), ("FR", None)]


def test_set_replaces_a_column_and_is_reported(write_file: WriteFile) -> None:
    """A set field's column is not read (not even recognised), and the input report says the
    value: `set: country = 'FR'`."""
    path = write_file("name,country\nA,Spain\n")
    rows, info = read_inputs([str(path)], constants={"country": "FR"})
    assert rows.get_column("country").to_list() == ["FR"]
    assert "country" not in info.columns[str(path)]
    assert info.ignored[str(path)] == ("country",)
    report = input_report({"read": info})
    assert report["set"] == {"country": "FR"}
    assert describe(report)[0] == "set: country = 'FR'"


def test_set_can_give_the_name_a_file_lacks(write_file: WriteFile) -> None:
    """With --set poi_name=..., a file with no name column reads (no 'no column looks like a
    place name' refusal)."""
    rows, _ = read_inputs([str(write_file("addr,city\n1 Main St,Springfield\n"))],
                          constants={"poi_name": "Depot"})  # fmt: skip
    assert rows.select("poi_name", "street").rows() == [("Depot", "1 Main St")]


def test_set_and_map_of_one_field_is_refused(write_file: WriteFile) -> None:
    """A field given a column and a value is a question, not a guess: refused, named."""
    with pytest.raises(InputError, match="--map and --set both give the field country"):
        read_inputs([str(write_file("name,land\nA,FR\n"))], mapping={"country": "land"},
                    constants={"country": "FR"})  # fmt: skip


def test_the_flag_parses_repeatable_field_value_pairs(tmp_path: Path) -> None:
    """`--set country=FR --set region=IDF` on the command line become the run's constants;
    a field that cannot be set, or no value, is refused naming it."""
    args = build_parser().parse_args(
        ["run", str(tmp_path / "a.csv"), "--set", "country=FR", "--set", "region=IDF"]
    )
    assert options_from_args(args).constants == (("country", "FR"), ("region", "IDF"))
    with pytest.raises(OptionsError, match="--set field 'id' is not one of"):
        RunOptions.parse({"constants": ["id=7"]})
    with pytest.raises(OptionsError, match="--set country= gives no value"):
        RunOptions.parse({"constants": ["country="]})


def test_set_is_part_of_a_runs_identity_only_when_given() -> None:
    """Runs made before the option keep their identity (still resumed); a run given --set is
    another command than the same run without it, or with another value."""
    plain = json.loads(RunOptions().identity_json())
    assert "constants" not in plain
    french = RunOptions.parse({"constants": ["country=FR"]})
    assert json.loads(french.identity_json()) == {**plain, "constants": {"country": "FR"}}
    spanish = RunOptions.parse({"constants": {"country": "ES"}})
    assert spanish.identity_json() != french.identity_json()
    assert RunOptions.parse(french.stored_json()) == french  # stored and read back


def test_set_for_one_file_leaves_the_other_files_alone(write_file: WriteFile) -> None:
    """`--set pubs.csv:poi_name=The Crown`: the pub list's rows get the name, the chain's rows
    keep their own; a plain --set still reaches both; a FILE that is no input is refused."""
    chain = write_file("name,city\nBurger 1,Leeds\nBurger 2,York\n", name="chain.csv")
    pubs = write_file("addr,city\n1 High St,Bath\n", name="pubs.csv")
    options = RunOptions.parse({"constants": ["pubs.csv:poi_name=The Crown", "country=GB"]})
    rows, info = read_inputs([str(chain), str(pubs)], constants=dict(options.constants))
    assert rows.select("poi_name", "country").rows() == [
        ("Burger 1", "GB"), ("Burger 2", "GB"), ("The Crown", "GB"),
    ]  # fmt: skip
    assert info.columns[str(chain)]["poi_name"] == "name"
    with pytest.raises(InputError, match=r"--set other\.csv:poi_name=X names the file"):
        read_inputs([str(chain)], constants={"other.csv:poi_name": "X"})


def test_set_for_one_file_named_by_its_url(write_file: WriteFile) -> None:
    """The per-file form works when the file is an object's URL, colons and '=' in it: the
    key ends at the first ':FIELD=' and the value keeps any ':' or '=' of its own."""
    url = "s3://bucket/dt=2026-11/pubs.csv"
    options = RunOptions.parse({"constants": [f"{url}:poi_name=Inn: The=Crown"]})
    assert options.constants == ((f"{url}:poi_name", "Inn: The=Crown"),)
    copy = write_file("addr,city\n1 High St,Bath\n", name="00000/pubs.csv")  # its local copy
    other = write_file("name,city\nBurger 1,Leeds\n", name="chain.csv")
    rows, _ = read_inputs([str(copy), str(other)], constants=dict(options.constants),
                          labels={str(copy): url})  # fmt: skip
    assert rows.select("source_file", "poi_name").rows() == [
        (url, "Inn: The=Crown"), (str(other), "Burger 1"),
    ]  # fmt: skip
