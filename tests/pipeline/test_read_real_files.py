"""Shapes real place files carry: bad bytes in a few rows, duplicate headers, odd column names,
per-file mappings, and duplicates that name the row they repeat (issue 12)."""

from __future__ import annotations

import pytest

from placeflow.errors import InputError
from placeflow.options import RunOptions
from placeflow.pipeline.dedupe import dedupe
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.read import read_inputs
from tests.pipeline.conftest import WriteFile

HEADER = "name,city,country\n"


def test_a_duplicate_names_the_row_it_repeats(write_file: WriteFile) -> None:
    """A duplicate's note says which row of which file it repeats."""
    path = write_file(HEADER + "Joe's Pizza,NYC,US\nOther,NYC,US\nJOES PIZZA,nyc,US\n", "a.csv")
    rows, _ = read_inputs([str(path)])
    places, _, _ = normalize(rows)
    out, _ = dedupe(places)
    notes = out.select("disposition", "note").rows()
    assert notes[2] == ("duplicate", f"duplicate of row 1 of {path}")
    assert notes[0][1] is None and notes[1][1] is None
    again, _ = dedupe(out.drop("place_key", "disposition", "first_row_ord"))
    assert again.get_column("note").to_list() == out.get_column("note").to_list()


def test_one_invalid_byte_rejects_its_row_only(write_file: WriteFile) -> None:
    """A single byte that is not UTF-8 rejects its row with a reason; the others are read."""
    body = "".join(f"Cafe {i},Paris,FR\n" for i in range(150))
    path = write_file((HEADER + body).encode() + b"Caf\xe9 Bad,Paris,FR\n")
    rows, info = read_inputs([str(path)])
    assert rows.height == 151 and info.bad_byte_rows == 1
    places, rejects, _ = normalize(rows)
    assert places.height == 150
    assert rejects.get_column("source_row").to_list() == [151]
    assert "not valid UTF-8" in rejects.item(0, "reason")
    assert "\ufffd" in rejects.item(0, "raw")
    assert any("not valid UTF-8" in w for w in info.warnings)


def test_a_latin1_file_is_still_refused_with_the_hint(write_file: WriteFile) -> None:
    """Many rows with Latin-1 bytes: the file has another encoding, and is refused with a hint."""
    body = "".join(f"Caf\u00e9 {i},Z\u00fcrich,CH\n" for i in range(20))
    path = write_file(HEADER + body, encoding="latin-1")
    with pytest.raises(InputError, match="--encoding cp1252"):
        read_inputs([str(path)])


def test_duplicate_header_names_warn(write_file: WriteFile) -> None:
    """`lat,lat` in a header gives a warning naming the column."""
    path = write_file("name,lat,lat,lon\nA,1,2,3\n")
    _, info = read_inputs([str(path)])
    assert info.columns[str(path)]["latitude"] == "lat"
    assert len(info.warnings) == 1 and "'lat'" in info.warnings[0]


def test_ignored_columns_are_listed(write_file: WriteFile) -> None:
    """Columns that feed no field are listed per file; odd real names are recognised."""
    path = write_file(
        "Store Number,Store Name,State/Province,Ownership Type,Timezone\n1,A,WA,x,y\n"
    )
    _, info = read_inputs([str(path)])
    assert info.columns[str(path)] == {
        "poi_name": "Store Name", "id": "Store Number", "region": "State/Province"
    }  # fmt: skip
    assert info.ignored[str(path)] == ("Ownership Type", "Timezone")


def test_per_file_mapping_runs_beside_a_normal_file(write_file: WriteFile) -> None:
    """`FILE:field=column` maps one file's odd header; the other file is recognised as usual."""
    odd = write_file("Nom du lieu,Ville\nLe Bar,Paris\n", "odd.csv")
    plain = write_file(HEADER + "Joe,NYC,US\n", "plain.csv")
    options = RunOptions(mapping=["odd.csv:poi_name=Nom du lieu", f"{odd}:city=Ville"])
    rows, info = read_inputs([str(plain), str(odd)], mapping=dict(options.mapping))
    assert info.columns[str(odd)] == {"poi_name": "Nom du lieu", "city": "Ville"}
    assert info.columns[str(plain)]["poi_name"] == "name"
    assert rows.get_column("poi_name").to_list() == ["Joe", "Le Bar"]
    with pytest.raises(InputError, match="not an input"):
        read_inputs([str(plain)], mapping={"nope.csv:poi_name": "x"})
    with pytest.raises(InputError, match="does not have"):
        read_inputs([str(plain), str(odd)], mapping={"poi_name": "Nom du lieu"})
