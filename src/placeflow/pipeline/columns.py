"""Recognise which of a file's columns hold which place field (names, or explicit --map; a
field mapped to no column, `--map street=`, is left out).

Recognition compares names case-insensitively, ignoring spaces, underscores, hyphens, dots and
slashes (`State/Province` is `stateprovince`),
and tries each field's synonyms in order of preference. A plain `address` column is the street
line when the file also has a separate city or postcode column (the address is then clearly
split into parts, as in the sample guides' `addr`); otherwise it is an unstructured address.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from placeflow.errors import SourceProblem
from placeflow.fields import MAPPABLE, MATCH_ONLY_FIELDS, split_key
from placeflow.pipeline.csvfile import EXCEL_SEP_LINE, SEPARATORS

SYNONYMS: dict[str, tuple[str, ...]] = {
    "poi_name": (
        "poiname",
        "name",
        "placename",
        "storename",
        "businessname",
        "locationname",
        "venuename",
        "sitename",
        "companyname",
        "business",
        "company",
        "title",  # a Google Maps export's place name (Apify and similar scrapers)
    ),
    "id": (
        "id",
        "placeid",
        "poiid",
        "storeid",
        "locationid",
        "externalid",
        "sourceid",
        "recordid",
        "storenumber",
        "storeno",
        "storenum",
        "locationnumber",
        "sitenumber",
        "siteid",
    ),
    "street": (
        "street",
        "addr",
        "streetaddress",
        "address1",
        "addressline1",
        "street1",
        "streetline1",
    ),
    "address": ("fulladdress", "freeformaddress", "formattedaddress"),
    "city": ("city", "town", "locality", "municipality", "cityname"),
    "region": (
        "region",
        "state",
        "province",
        "stateprovince",
        "stateorprovince",
        "statecode",
        "subdivision",
        "subd",
    ),
    "postcode": ("postcode", "postalcode", "zip", "zipcode", "postal"),
    "country": ("country", "countrycode", "countryname", "countryiso"),
    "latitude": ("latitude", "lat", "locationlat"),
    "longitude": ("longitude", "lon", "lng", "long", "locationlng", "locationlon"),
    "phone": (
        "phone",
        "telephone",
        "tel",
        "phonenumber",
        "telephonenumber",
        "phoneno",
        "businessphone",
        "contactphone",
    ),
    "website": (
        "website",
        "websites",  # as exports that allow several sites a place name the column
        "url",
        "websiteurl",
        "web",
        "homepage",
        "webaddress",
        "webpage",
    ),
}
AMBIGUOUS_ADDRESS = "address"
"""A bare `address` column: the street line or a full address, decided by the other columns."""

_NOISE = re.compile(r"[\s_\-./\ufeff]+")


def canonical(column: str) -> str:
    """The form names are compared in: lower case without spaces, underscores, hyphens, dots."""
    return _NOISE.sub("", column).lower()


def check_mapping(mapping: Mapping[str, str]) -> None:
    """Every key of an explicit mapping must be a place field or `id` (after any `FILE:`); a
    key with no column (`--map street=`) leaves its field out."""
    unknown = sorted({split_key(k)[1] for k in mapping} - set(MAPPABLE))
    if unknown:
        raise SourceProblem(
            f"--map names unknown field(s) {', '.join(map(repr, unknown))}; "
            f"the fields are: {', '.join(MAPPABLE)}"
        )


def _describe(header: Sequence[str]) -> str:
    if not header:
        return "no columns"
    shown = ", ".join(repr(c) for c in header[:20])
    more = f" and {len(header) - 20} more" if len(header) > 20 else ""
    return f"columns {shown}{more}"


def _find_explicit(column: str, header: Sequence[str]) -> int | None:
    if column in header:
        return header.index(column)
    loose = [i for i, c in enumerate(header) if canonical(c) == canonical(column)]
    return loose[0] if len(loose) == 1 else None


def resolve_columns(
    header: Sequence[str], mapping: Mapping[str, str], *, fixed: frozenset[str] = frozenset()
) -> dict[str, int]:
    """Place field (or `id`) -> position of the column that holds it; explicit mapping wins.
    The `fixed` fields have a value without a column (`--set`), and a field mapped to no
    column (`--map street=`) is left out: for neither is a column looked for."""
    chosen: dict[str, int] = {}
    left_out = {field for field, column in mapping.items() if not column}
    fixed = fixed | left_out
    for field, column in mapping.items():
        if field in left_out:
            continue
        position = _find_explicit(column, header)
        if position is None:
            raise SourceProblem(
                f"--map {field}={column} names a column the file does not have; "
                f"it has {_describe(header)}"
            )
        chosen[field] = position
    names = [canonical(c) for c in header]
    used = set(chosen.values())
    for field in ("poi_name", "id", "street", "address", "city", "region", "postcode",
                  "country", "latitude", "longitude", *MATCH_ONLY_FIELDS):  # fmt: skip
        if field in chosen or field in fixed:
            continue
        for synonym in SYNONYMS[field]:
            hits = [i for i, n in enumerate(names) if n == synonym and i not in used]
            if hits:
                chosen[field] = hits[0]
                used.add(hits[0])
                break
    bare = [i for i, n in enumerate(names) if n == AMBIGUOUS_ADDRESS and i not in used]
    if bare:
        split = "city" in chosen or "postcode" in chosen
        target = "street" if split and "street" not in chosen else "address"
        if target not in chosen and target not in fixed:
            chosen[target] = bare[0]
    if "poi_name" not in chosen and "poi_name" not in fixed:
        hint = ""
        found = [s for s in SEPARATORS if len(header) == 1 and s in header[0]]
        if found:
            flag = "--separator " + ("tab" if found[0] == "\t" else repr(found[0]))
            hint = f" (the file seems to have {found[0]!r} between values: pass {flag})"
        if header and EXCEL_SEP_LINE.fullmatch(header[0]):
            # Excel's "sep=;" line: the separator it names, or the one it split at (sep=,)
            named = header[0][4:] or ","
            hint = f" (its first line is Excel's separator line 'sep={named}': delete it)"
        raise SourceProblem(
            f"no column looks like a place name; the file has {_describe(header)}{hint}. "
            "Name the column with --map poi_name=COLUMN (if the first row is data, add a header)"
        )
    return chosen


LOCATION_FIELDS = ("street", "address", "city", "region", "postcode", "latitude", "longitude")
"""The fields that say where a place is: a file must map one of them to be sent as it is."""
ADDRESS_WORDS: dict[str, str] = {
    **dict.fromkeys(("adresse", "address", "addr", "adres", "adresa", "rue", "strasse",
                     "straße", "calle", "via", "direccion", "dirección", "indirizzo", "endereco",
                     "endereço", "morada", "voie", "street"), "street"),
    **dict.fromkeys(("commune", "ville", "city", "town", "stadt", "gemeinde", "gemeente",
                     "comune", "ciudad", "municipio", "localite", "localité", "locality",
                     "municipality", "cidade", "plaats", "ort", "poblacion", "población"), "city"),
    **dict.fromkeys(("codepostal", "cp", "postcode", "postalcode", "zip", "zipcode", "plz",
                     "postleitzahl", "cap", "codigopostal", "códigopostal", "postnummer", "npa"),
                    "postcode"),
    **dict.fromkeys(("departement", "département", "region", "région", "province", "provincia",
                     "state", "bundesland", "county", "canton"), "region"),
}  # fmt: skip
"""Words of column names that hold an address, in the languages of the files placeflow meets,
and the field each would feed (`unmapped_address`)."""


def address_like(column: str) -> str | None:
    """The field a column's name says it holds part of an address for (None: it does not): its
    name is one of ADDRESS_WORDS, or begins or ends with one of five letters or more (not a
    mail or web address)."""
    name = canonical(column)
    if "mail" in name or "web" in name:
        return None
    for word, field in ADDRESS_WORDS.items():
        if name == word or (len(word) >= 5 and (name.startswith(word) or name.endswith(word))):
            return field
    return None


def unmapped_address(
    chosen: Mapping[str, str], fixed: Sequence[str], header: Sequence[str]
) -> list[tuple[str, str]]:
    """The columns that look like an address and feed nothing, each with the field it would
    feed, when a file's mapping (`chosen`, and its `--set` fields `fixed`) gives no field that
    says where a place is; empty otherwise."""
    if any(f in chosen or f in fixed for f in LOCATION_FIELDS):
        return []
    used = set(chosen.values())
    out = []
    for column in dict.fromkeys(header):
        field = address_like(column) if column not in used else None
        if field is not None:
            out.append((column, field))
    return out
