"""A mapping that leaves a file's address out (issue 48): a file of which only a name is
mapped while columns that look like an address (adresse, commune, code_postal) are ignored is
refused before anything is sent, naming the columns to map, exit 2; --without-address sends it
as it is; a file with no such column, or with any location field mapped, is read as before."""

from __future__ import annotations

from pathlib import Path

import pytest

import placeflow
from placeflow.errors import EXIT_USAGE, InputError, exit_code
from placeflow.options import RunOptions
from placeflow.pipeline.columns import address_like
from placeflow.pipeline.read import read_inputs, stream_inputs
from tests.sandbox_target import served

from .conftest import WriteFile

MUSEUMS = (
    "nom_officiel,adresse,commune,code_postal,url\n"
    "Musée A,1 rue Lepic,Paris,75018,https://a.example\n"
    "Musée B,2 quai Branly,Paris,75007,https://b.example\n"
)
KEY = "sk_address_less_key_0048"


def test_a_name_only_mapping_with_an_ignored_address_is_refused(write_file: WriteFile) -> None:
    """Only the name mapped, adresse / commune / code_postal ignored: refused when the file is
    opened, naming each column and the --map that takes it; a usage error (exit 2)."""
    path = write_file(MUSEUMS, name="musees.csv")
    with pytest.raises(InputError) as refused:
        stream_inputs([str(path)], mapping={"poi_name": "nom_officiel"}, address_optional=False)
    said = str(refused.value)
    assert "'adresse', 'commune', 'code_postal' that look like an address" in said
    for given in ("street=adresse", "city=commune", "postcode=code_postal"):
        assert f"--map '{path}:{given}'" in said
    assert "--without-address" in said and exit_code(refused.value) == EXIT_USAGE


def test_files_with_a_location_or_without_address_columns_are_read(write_file: WriteFile) -> None:
    """Mapping any location field (or --set one), or a file with no address-like column, is
    read as before; a mail or web address is not an address."""
    path = write_file(MUSEUMS, name="musees.csv")
    mapped = {"poi_name": "nom_officiel", "city": "commune"}
    rows, _ = read_inputs([str(path)], mapping=mapped)
    assert rows.height == 2
    stream_inputs([str(path)], mapping=mapped, address_optional=False)
    stream_inputs([str(path)], mapping={"poi_name": "nom_officiel"}, constants={"city": "Paris"},
                  address_optional=False)  # fmt: skip
    plain = write_file("name,email_address,website\nA,a@x.example,https://x.example\n")
    stream_inputs([str(plain)], address_optional=False)
    assert address_like("adresse_postale") == "street" and address_like("nom_commune") == "city"
    assert address_like("CP") == "postcode" and address_like("Email Address") is None


def test_a_run_is_refused_before_spending_unless_without_address(
    write_file: WriteFile, tmp_path: Path
) -> None:
    """The run is refused with nothing sent (the sandbox counted no request) and nothing
    recorded; with --without-address it sends the names and completes."""
    path = write_file(MUSEUMS, name="musees.csv")
    options = RunOptions(mapping={"poi_name": "nom_officiel"}, dedupe="exact")
    db = tmp_path / "wh.duckdb"
    with served(KEY) as (sandbox, target):
        with pytest.raises(InputError, match="look like an address"):
            placeflow.run([str(path)], options=options, db=db, target=target)
        assert sandbox.stats()["requests"] == {}
        accepted = options.model_copy(update={"without_address": True})
        done = placeflow.run([str(path)], options=accepted, db=db, target=target)
    assert done.status == "completed" and done.submitted == 2
