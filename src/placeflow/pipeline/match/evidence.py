"""The evidence a person would use to keep two places apart, as columns and as SQL rules.

Computed column-wise with polars for each place (`marks`, `branch_text`, `house_number`,
`phone_key`), and judged over a pair (l, r) in DuckDB SQL (`CONFLICT`, `CHAIN_AGREES`), so that
the fuzzy pass refuses a pair, and a cluster holding such a pair is rebuilt
(`placeflow.pipeline.match.engine`):

- marks: qualifiers that tell two outlets of one name apart, each "class:value":
  n: the numbers of the name (digits, "第二"/"二号店" in CJK numerals, roman numerals II-XX, or
  I/V/X standing alone): "1店" vs "2店", "Sector 8C" vs "17C", "[U2]" vs "[U5]", "Legde, I" vs "II";
  t: terminal ("Terminal C", "T1"), c: concourse, g: gate ("gate C67"), l: level or floor
  ("LEVEL +1" vs "LEVEL -1", "B1" vs "1F", "2F", "地下1階", "Upper Level"), u: unit, suite,
  shop, stall, kiosk, room ("Shop No. 12", "#200"), w: wing, court, hall, pier, zone, sector,
  block, tower, building, platform ("Center Court" vs "East Wing"), d: a direction word of the
  name (north, süd, ost, West, ...), s: drive-thru (a drive-thru is never the store beside it).
  Two places whose marks of one class differ are never merged; a class only one of them names
  proves nothing (a perturbed "Level 2, " line), except s: drive-thru on one side alone also
  keeps them apart.
- branch: the branch part of a name that the name comparison leaves out (after " - ", in
  parentheses, "@ ..."): "HDFC BANK - NIGHOJE" vs "HDFC BANK - SAVARDARI" differ there alone.
- house_number: the first house number of the street line with its hyphenated parts
  ("2-4-1" vs "2-6-1", Japanese block numbering), unit clauses and "No."/"Nr." left out.
- phone_key: the last 9 digits of a phone (fewer if it has fewer): "+49 30 1234567" and
  "030 1234567" agree; two different phones never merge, whatever else agrees.
"""

from __future__ import annotations

import polars as pl

from placeflow.pipeline.columnar import apply

_FOLD = r"\p{M}+"
ROMAN = {"ii": 2, "iii": 3, "iv": 4, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "xi": 11,
         "xii": 12, "xiii": 13, "xiv": 14, "xv": 15, "xvi": 16, "xvii": 17, "xviii": 18,
         "xix": 19, "xx": 20}  # fmt: skip
"""Roman numerals read as numbers anywhere in a name; I, V and X only where a comma, a bracket
or the end follows them ("Legde, I", "RBO V, Mumbai")."""
ROMAN_LAST = {"i": 1, "v": 5, "x": 10}
CJK_DIGITS = {"\u3007": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}  # fmt: skip
DIRECTIONS = {"north": "n", "nord": "n", "norte": "n", "south": "s", "sud": "s", "sued": "s",
              "sur": "s", "east": "e", "ost": "e", "est": "e", "este": "e", "west": "w",
              "ouest": "w", "oeste": "w", "northeast": "ne", "northwest": "nw",
              "southeast": "se", "southwest": "sw", "nordost": "ne", "nordwest": "nw",
              "sudost": "se", "sudwest": "sw"}  # fmt: skip
"""Direction words of a name, folded to one code per direction (West and Ouest agree)."""
_LINE_MARKS = (
    ("t", r"\b(?:terminal|term)\s*\.?\s*([a-z]\d?|\d+[a-z]?)\b"),
    ("t", r"\bt\s?(\d)\b"),
    ("c", r"\bconcourse\s+([a-z]\d*|\d+)\b"),
    ("g", r"\bgates?\s*([a-z]?\d+[a-z]?|[a-z])\b"),
    ("l", r"\b(?:level|lvl|floor|flr|etage|ebene|piso|niveau)\s*\.?\s*(-?\d+|[a-z]\d?)\b"),
    ("l", r"\b(-?\d+)\s*(?:st|nd|rd|th|e|er|\.)?\s*(?:floor|flr|fl|level|etage|og|stock)\b"),
    ("l", r"\b(b\d|\d+f|lg|ug|gf|mezzanine|ground|upper|lower)\s*(?:level|floor|fl|concourse)\b"),
    ("l", r"\b(b\d|\d+f)\b"),
    ("l", r"((?:地下)?\d+)\s*[階楼層]"),
    ("u", r"\b(?:suite|ste|unit|shop|stall|kiosk|space|room|rm)\s*\.?\s*"
          r"(?:no\.?\s*|nr\.?\s*|#\s*)?([a-z]?\d+[a-z]?)\b"),
    ("u", r"#\s*([a-z]?\d+[a-z]?)\b"),
    ("w", r"\b((?:north|south|east|west|centre|center|central|upper|lower|main)\s+"
          r"(?:wing|court|concourse|mall|side|entrance|building|tower|hall|pier))\b"),
    ("w", r"\b((?:wing|court|hall|halle|pier|zone|sector|block|tower|building|bldg|platform"
          r"|gleis)\s+(?:[a-z]|\d+[a-z]?|[a-z]\d+))\b"),
    ("w", r"\b((?:[a-z]|\d+[a-z]?)\s+(?:wing|court|pier|zone|sector|block|tower|building"
          r"|platform))\b"),
)  # fmt: skip
"""(class, pattern) of the qualifiers read from a name or a street line (folded, a sign kept
only where it stands alone: "LEVEL -1"); each pattern's first group is the value."""
_HINT = (
    r"#|terminal|term\b|\bt\s?\d\b|concourse|gate|level|lvl|floor|flr|\bfl\b|etage|ebene|piso"
    r"|niveau|\bog\b|stock|suite|\bste\b|unit|shop|stall|kiosk|space|room|\brm\b|wing|court"
    r"|hall|pier|zone|sector|block|tower|building|bldg|platform|gleis|\bb\d|\d+f\b|階|楼|層"
)
"""A cheap test for a text that may hold a qualifier (the patterns run on those alone)."""
_DRIVE = r"\bdrive\s*-?\s*(?:thru|through|in|up)\b|ドライブスルー|得来速"
_CJK = (
    "第[\u3007零一二两三四五六七八九十百]+"
    "|[\u3007零一二两三四五六七八九十]+(?:号店|號店|店|号館|号馆|番館)"
)
_UNSIGNED = (r"([^\s(\[,;:/])[-\u2212](\d)", "$1 $2")
"""A hyphen between two parts ("2-4-1", "A-1", "level-2") is no sign: read as a space."""


def fold(e: pl.Expr) -> pl.Expr:
    """Lower case, compatibility-normalised (fullwidth digits are digits), accents stripped."""
    return e.str.normalize("NFKD").str.replace_all(_FOLD, "").str.to_lowercase()


def _folded(values: pl.Series) -> pl.Series:
    return apply(values.cast(pl.String), fold).fill_null("")


def _cjk_value(text: str) -> int:
    """第二 -> 2, 十二 -> 12, 二十 -> 20 (the ordinals of branch names)."""
    total, current = 0, 0
    for c in text:
        if c in ("十", "百"):
            total += max(current, 1) * (10 if c == "十" else 100)
            current = 0
        elif c in CJK_DIGITS:
            current = current * 10 + CJK_DIGITS[c]
    return total + current


def _empty(n: int) -> pl.Series:
    return pl.Series("m", [[]] * n, pl.List(pl.String))


def _cjk_numbers(folded: pl.Series) -> pl.Series:
    """Numbers written in CJK numerals as a branch ordinal (第二, 二号店, 三店): "n:" marks."""
    found = folded.str.extract_all(_CJK)
    distinct = found.explode().drop_nulls().unique()
    if distinct.len() == 0:
        return _empty(folded.len())
    numbers = {text: f"n:{_cjk_value(text)}" for text in distinct.to_list()}  # distinct only
    return found.list.eval(pl.element().replace_strict(numbers, default=None))


def name_marks(names: pl.Series) -> pl.Series:
    """The marks (n, d, s and the qualifiers) of names, as lists of "class:value"."""
    folded = _folded(names)
    frame = pl.DataFrame({"f": folded})
    words = pl.col("f").str.extract_all(r"[a-z]+")
    alone = (
        pl.col("f")
        .str.extract_all(r"\b[ivx]\b\s*(?:[,;)\]]|$)")
        .list.eval(pl.element().str.extract(r"([ivx])", 1))
    )
    last = alone.list.eval(
        pl.element().replace_strict(ROMAN_LAST, default=None, return_dtype=pl.String)
    )
    drive = pl.when(pl.col("f").str.contains(_DRIVE)).then(pl.lit("s:drive"))
    built = frame.select(
        pl.col("f")
        .str.extract_all(r"\d+")
        .list.eval(pl.lit("n:") + pl.element().str.strip_chars_start("0").replace("", "0"))
        .alias("digits"),
        words.list.eval(
            pl.lit("n:") + pl.element().replace_strict(ROMAN, default=None, return_dtype=pl.String)
        )
        .list.drop_nulls()
        .alias("roman"),
        last.list.eval(pl.lit("n:") + pl.element()).alias("last"),
        words.list.eval(pl.lit("d:") + pl.element().replace_strict(DIRECTIONS, default=None))
        .list.drop_nulls()
        .alias("direction"),
        pl.concat_list(drive).list.drop_nulls().alias("drive"),
    )
    parts = [*built.get_columns(), _cjk_numbers(folded), line_marks(folded)]
    return (
        pl.DataFrame([s.rename(str(i)) for i, s in enumerate(parts)])
        .select(pl.concat_list(pl.all()))
        .to_series()
    )


def line_marks(folded: pl.Series) -> pl.Series:
    """The qualifier marks (t, c, g, l, u, w) of folded text; empty lists where none."""
    at = folded.str.contains(_HINT).fill_null(False).arg_true()
    if at.len() == 0:
        return _empty(folded.len())
    text = _signed(folded.gather(at))
    parts = [
        text.str.extract_all(pattern).list.eval(
            pl.lit(f"{cls}:") + _value(cls, pl.element().str.replace(pattern, "$1"))
        )
        for cls, pattern in _LINE_MARKS
    ]
    found = (
        pl.DataFrame([p.rename(str(i)) for i, p in enumerate(parts)])
        .select(pl.concat_list(pl.all()))
        .to_series()
    )
    return _spread(folded.len(), at, found)


def _signed(text: pl.Series) -> pl.Series:
    """Text as the mark patterns read it: a hyphen between two parts a space, a minus sign a
    hyphen, a plus sign before a number dropped ("LEVEL +1" is level 1, "LEVEL -1" level -1)."""
    unsigned = text.str.replace_all(*_UNSIGNED).str.replace_all("\u2212", "-")
    return unsigned.str.replace_all(r"\+(\d)", "$1")


def _spread(n: int, at: pl.Series, values: pl.Series) -> pl.Series:
    """Lists `values` at positions `at` of n rows, empty lists elsewhere."""
    placed = pl.DataFrame({"i": at.cast(pl.UInt32), "m": values})
    rows = pl.DataFrame({"i": pl.int_range(n, dtype=pl.UInt32, eager=True)})
    joined = rows.join(placed, on="i", how="left", maintain_order="left")
    return joined.select(pl.col("m").fill_null(pl.lit([], pl.List(pl.String)))).to_series()


def _value(cls: str, value: pl.Expr) -> pl.Expr:
    """A mark's value as compared: no spaces; a level's "1F"/"B1"/"地下1" as 1/-1/-1 and
    "GF"/"ground" as 0, so two spellings of one floor agree."""
    value = value.str.replace_all(r"\s+", "")
    if cls != "l":
        return value
    return (
        value.str.replace(r"^(\d+)f$", "$1")
        .str.replace(r"^(?:b|地下)(\d+)f?$", "-$1")
        .str.replace(r"^(?:gf|ground)$", "0")
    )


def marks(names: pl.Series, lines: pl.Series) -> pl.Series:
    """Each place's marks from its name and street line: sorted, distinct; null when none."""
    both = pl.DataFrame({"a": name_marks(names), "b": line_marks(_folded(lines))}).select(
        pl.concat_list("a", "b").list.unique().list.sort().alias("marks")
    )
    return both.select(pl.when(pl.col("marks").list.len() > 0).then("marks")).to_series()


def street_parts(lines: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(street_number, rest) of each street line: the first house number with its hyphenated
    parts kept ("2-4-1"), a "No."/"Nr." before it and the unit, level and gate clauses left
    out (null when none); and the folded line without those clauses and that number."""
    text = _folded(lines).str.replace_all(r"\b(?:no|nr|num|number)\s*\.?\s*(\d)", " $1")
    at = text.str.contains(_HINT).fill_null(False).arg_true()
    if at.len():
        part = _signed(text.gather(at))
        for _cls, pattern in _LINE_MARKS:
            part = part.str.replace_all(pattern, " ")
        text = text.scatter(at, part)
    number = r"(?:^|[\s,])(\d{1,6}[a-z]?(?:\s*[-/]\s*\d{1,6}[a-z]?)*)(?:$|[\s,./;()-])"
    found = text.str.extract(number, 1).str.replace_all(r"\s+", "").str.replace_all("/", "-")
    rest = text.str.replace(number, " ")
    return found.rename("street_number"), rest.rename("street")


def phone_key(phones: pl.Series) -> pl.Series:
    """The last 9 digits of each phone (all of them when fewer); null under 7 digits."""
    digits = phones.cast(pl.String).str.replace_all(r"\D", "")
    return (
        digits.to_frame("p")
        .select(pl.when(pl.col("p").str.len_chars() >= 7).then(pl.col("p").str.slice(-9)))
        .to_series()
        .rename("phone_all")
    )
