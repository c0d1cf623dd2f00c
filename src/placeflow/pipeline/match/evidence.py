"""The evidence a person would use to keep two places apart, as columns and as SQL rules.

Computed column-wise with polars for each place (`marks`, `street_parts`, `phone_key`; the
branch of a name in `placeflow.pipeline.match.features`), and judged over a pair (l, r) in
DuckDB SQL (`placeflow.pipeline.match.model`: HARD_RULES, CONFLICT, CHAIN_AGREES), so that the
fuzzy pass refuses a pair, and a cluster holding such a pair is rebuilt (`grouping`):

- marks: qualifiers that tell two outlets of one name apart, each "class:value":
  n: the numbers of the name (digits, "第二"/"二号店" in CJK numerals, roman numerals II-XX, or
  I/V/X standing alone): "1店" vs "2店", "Sector 8C" vs "17C", "[U2]" vs "[U5]", "Legde, I" vs "II";
  t: terminal ("Terminal C", "T1"), c: concourse, g: gate ("gate C67"), l: level or floor
  ("LEVEL +1" vs "LEVEL -1", "B1" vs "1F", "2F", "地下1階", "Upper Level"), u: unit, suite,
  shop, stall, kiosk, room ("Shop No. 12", "#200"), w: wing, court, hall, pier, zone, sector,
  block, tower, building, platform ("Center Court" vs "East Wing"), a: the side of an airport's
  security or hall (airside/landside, pre/post security, arrivals/departures), b: the carriageway
  of a service plaza (northbound/southbound/...), m: a mile marker ("Mile Marker 93" vs "41"; not
  "MM"/"MP", which are a state's code in many addresses),
  d: a direction word of the name (north, süd, ost, West, ...), s: drive-thru (a drive-thru is
  never the store beside it). Units at one airport, service plaza or mall share the venue's
  address: these marks (with terminals, concourses, gates, levels, units, wings and courts) and
  the chain's distance rule (`model.CHAIN_FAR`) keep them apart.
  Two places whose marks of one class differ are never merged; a class only one of them names
  proves nothing (a perturbed "Level 2, " line), except s: drive-thru on one side alone also
  keeps them apart.
- branch: the branch part of a name that the name comparison leaves out (after " - ", in
  parentheses, "@ ..."): "HDFC BANK - NIGHOJE" vs "HDFC BANK - SAVARDARI" differ there alone.
- street_number (`street_parts`): the first house number of the street line with its
  hyphenated parts ("2-4-1" vs "2-6-1", Japanese block numbering), unit clauses and
  "No."/"Nr." left out.
- phone_key: the last 9 digits of a phone (fewer if it has fewer): "+49 30 1234567" and
  "030 1234567" agree; two different phones never merge, whatever else agrees.
"""

from __future__ import annotations

import polars as pl

from placeflow.pipeline.columnar import patched

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
    ("t", r"(?-u:\b)(?:terminal|term)\s*\.?\s*([a-z]\d?|\d+[a-z]?)(?-u:\b)"),
    ("t", r"(?-u:\b)t\s?(\d)(?-u:\b)"),
    ("c", r"(?-u:\b)concourse\s+([a-z]\d*|\d+)(?-u:\b)"),
    ("g", r"(?-u:\b)gates?\s*([a-z]?\d+[a-z]?|[a-z])(?-u:\b)"),
    ("l", r"(?-u:\b)(?:level|lvl|floor|flr|etage|ebene|piso|niveau)\s*\.?\s*"
          r"(-?\d+|[a-z]\d?)(?-u:\b)"),
    ("l", r"(?-u:\b)(-?\d+)\s*(?:st|nd|rd|th|e|er|\.)?\s*"
          r"(?:floor|flr|fl|level|etage|og|stock)(?-u:\b)"),
    ("l", r"(?-u:\b)(b\d|\d+f|lg|ug|gf|mezzanine|ground|upper|lower)\s*"
          r"(?:level|floor|fl|concourse)(?-u:\b)"),
    ("l", r"(?-u:\b)(b\d|\d+f)(?-u:\b)"),
    ("l", r"((?:地下)?\d+)\s*[階楼層]"),
    ("u", r"(?-u:\b)(?:suite|ste|unit|shop|stall|kiosk|space|room|rm)\s*\.?\s*"
          r"(?:no\.?\s*|nr\.?\s*|#\s*)?([a-z]?\d+[a-z]?)(?-u:\b)"),
    ("u", r"#\s*([a-z]?\d+[a-z]?)(?-u:\b)"),
    ("w", r"(?-u:\b)((?:north|south|east|west|centre|center|central|upper|lower|main)\s+"
          r"(?:wing|court|concourse|mall|side|entrance|building|tower|hall|pier))(?-u:\b)"),
    ("w", r"(?-u:\b)((?:wing|court|hall|halle|pier|zone|sector|block|tower|building|bldg|platform"
          r"|gleis)\s+(?:[a-z]|\d+[a-z]?|[a-z]\d+))(?-u:\b)"),
    ("w", r"(?-u:\b)((?:[a-z]|\d+[a-z]?)\s+(?:wing|court|pier|zone|sector|block|tower|building"
          r"|platform))(?-u:\b)"),
    ("a", r"(?-u:\b)(airside|landside)(?-u:\b)"),
    ("a", r"(?-u:\b)(pre|post)[\s-]*security(?-u:\b)"),
    ("a", r"(?-u:\b)(arrival|departure)s?(?-u:\b)"),
    ("b", r"(?-u:\b)(north|south|east|west)[\s-]*bound(?-u:\b)"),
    ("m", r"(?-u:\b)mile\s*(?:marker|post)\s*\.?\s*(\d+(?:\.\d+)?)(?-u:\b)"),
)  # fmt: skip
"""(class, pattern) of the qualifiers read from a name or a street line (folded, a sign kept
only where it stands alone: "LEVEL -1"); each pattern's first group is the value."""
_HINT = (
    r"#|terminal|term(?-u:(?-u:\b))|(?-u:(?-u:\b))t\s?\d(?-u:(?-u:\b))|concourse|gate|level|lvl|floor|flr|(?-u:(?-u:\b))fl(?-u:(?-u:\b))|etage|ebene|piso"
    r"|niveau|(?-u:(?-u:\b))og(?-u:(?-u:\b))|stock|suite|(?-u:(?-u:\b))ste(?-u:(?-u:\b))|unit|shop|stall|kiosk|space|room|(?-u:(?-u:\b))rm(?-u:(?-u:\b))|wing|court"
    r"|hall|pier|zone|sector|block|tower|building|bldg|platform|gleis|(?-u:(?-u:\b))b\d|\d+f(?-u:(?-u:\b))|階|楼|層"
    r"|airside|landside|security|arrival|departure|bound|mile"
)
"""A cheap test for a text that may hold a qualifier (the patterns run on those alone)."""
_NAME_HINT = (
    r"\d|[\u3007零一二两三四五六七八九十]|(?-u:(?-u:\b))[ivx]+(?-u:(?-u:\b))|north|south|east|west|nord|s[uü]e?d|ost(?-u:(?-u:\b))"
    r"|(?-u:(?-u:\b))est(?-u:(?-u:\b))|este(?-u:(?-u:\b))|ouest|oeste|(?-u:(?-u:\b))sur(?-u:(?-u:\b))|norte|drive|ドライブスルー|得来速|"
    + _HINT
)
"""A cheap test for a name that may hold a mark (numbers, directions, drive-thru, qualifiers)."""
_ROMAN_ALONE = r"(?-u:(?-u:\b))[ivx](?-u:(?-u:\b))\s*(?:[,;)\]]|$)"
"""I, V or X standing alone before a comma, a bracket or the end ("Legde, I")."""
_DRIVE = r"(?-u:(?-u:\b))drive\s*-?\s*(?:thru|through|in|up)(?-u:(?-u:\b))|ドライブスルー|得来速"
_CJK = (
    "第[\u3007零一二两三四五六七八九十百]+"
    "|[\u3007零一二两三四五六七八九十]+(?:号店|號店|店|号館|号馆|番館)"
)
_UNSIGNED = (r"([^\s(\[,;:/])[-\u2212](\d)", "$1 $2")
"""A hyphen between two parts ("2-4-1", "A-1", "level-2") is no sign: read as a space."""


def fold(e: pl.Expr) -> pl.Expr:
    """Lower case, compatibility-normalised (fullwidth digits are digits), accents stripped."""
    return e.str.normalize("NFKD").str.replace_all(_FOLD, "").str.to_lowercase()


def folded(values: pl.Series) -> pl.Series:
    """`fold` over a column, the Unicode work only on values that are not ASCII; nulls as ""."""
    text = values.cast(pl.String)
    wide = text.str.len_bytes() != text.str.len_chars()
    lower = text.str.to_lowercase()
    return patched(lower, wide, fold).fill_null("")


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


_LONG = pl.Schema({"i": pl.UInt32, "mark": pl.String})
"""Marks in long form: the place's position among those read, and one "class:value"."""


def _cjk_numbers(text: pl.DataFrame) -> pl.DataFrame:
    """Numbers written in CJK numerals as a branch ordinal (第二, 二号店, 三店): "n:" marks."""
    found = (
        text.filter(pl.col("t").str.contains(_CJK))
        .select("i", pl.col("t").str.extract_all(_CJK).alias("w"))
        .explode("w")
        .drop_nulls()
    )
    if found.height == 0:
        return pl.DataFrame(schema=_LONG)
    numbers = {w: f"n:{_cjk_value(w)}" for w in found.get_column("w").unique().to_list()}
    return found.select("i", pl.col("w").replace_strict(numbers).alias("mark"))


def _name_marks(names: pl.DataFrame) -> list[pl.DataFrame]:
    """The n, d and s marks of folded names (i, t), in long form."""
    tokens = names.select("i", pl.col("t").str.extract_all(r"[a-z]+|\d+").alias("w"))
    w = pl.col("w")
    words = tokens.explode("w").drop_nulls()
    digits = words.filter(w.str.contains(r"^\d")).select(
        "i", (pl.lit("n:") + w.str.strip_chars_start("0").replace("", "0")).alias("mark")
    )
    roman = words.filter(w.is_in(list(ROMAN))).select(
        "i", (pl.lit("n:") + w.replace_strict(ROMAN, return_dtype=pl.String)).alias("mark")
    )
    direction = words.filter(w.is_in(list(DIRECTIONS))).select(
        "i", (pl.lit("d:") + w.replace_strict(DIRECTIONS)).alias("mark")
    )
    alone = names.select("i", pl.col("t").str.extract_all(_ROMAN_ALONE).alias("w"))
    alone = alone.explode("w").drop_nulls().select(
        "i", (pl.lit("n:") + w.str.extract("([ivx])", 1).replace_strict(ROMAN_LAST,
              return_dtype=pl.String)).alias("mark"),
    )  # fmt: skip
    drive = names.filter(pl.col("t").str.contains(_DRIVE)).select(
        "i", pl.lit("s:drive").alias("mark")
    )
    return [digits, roman, direction, alone, drive, _cjk_numbers(names)]


def _by_class() -> dict[str, tuple[str, str]]:
    """Each class's patterns as one alternation, and the replacement that reads its value (the
    groups concatenated: the one that matched holds it, the others are empty)."""
    out = {}
    for cls in dict.fromkeys(c for c, _ in _LINE_MARKS):
        patterns = [p for c, p in _LINE_MARKS if c == cls]
        groups = "".join(f"${{{k}}}" for k in range(1, len(patterns) + 1))
        out[cls] = ("|".join(f"(?:{p})" for p in patterns), groups)
    return out


_CLASSES = _by_class()
_ANY_MARK = "|".join(f"(?:{p})" for p, _ in _CLASSES.values())
"""Every qualifier pattern as one (what `street_parts` takes out of a street line)."""


def _qualifier_marks(text: pl.DataFrame) -> list[pl.DataFrame]:
    """The qualifier marks (t, c, g, l, u, w) of folded text (i, t), in long form, read from
    the texts that may hold one (`_HINT`), one pattern per class."""
    hinted = text.filter(pl.col("t").str.contains(_HINT))
    if hinted.height == 0:
        return []
    hinted = hinted.with_columns(_signed(hinted.get_column("t")).alias("t"))
    out = []
    for cls, (pattern, groups) in _CLASSES.items():
        found = hinted.select("i", pl.col("t").str.extract_all(pattern).alias("w"))
        found = found.explode("w").drop_nulls()
        if found.height:
            value = _value(cls, pl.col("w").str.replace(pattern, groups))
            out.append(found.select("i", (pl.lit(f"{cls}:") + value).alias("mark")))
    return out


def _signed(text: pl.Series) -> pl.Series:
    """Text as the mark patterns read it: a hyphen between two parts a space, a minus sign a
    hyphen, a plus sign before a number dropped ("LEVEL +1" is level 1, "LEVEL -1" level -1)."""
    unsigned = text.str.replace_all(*_UNSIGNED).str.replace_all("\u2212", "-")
    return unsigned.str.replace_all(r"\+(\d)", "$1")


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
    """Each place's marks from its name (n, d, s and the qualifiers) and its street line (the
    qualifiers): sorted, distinct, joined by "|" (a string is cheaper to stage than a list);
    null when none. Only the places whose name or line may hold
    one (`_NAME_HINT`, `_HINT`) are read, in long form (a row per word or mark found)."""
    hinted = names.cast(pl.String).str.contains("(?i)" + _NAME_HINT).fill_null(False)
    hinted |= lines.cast(pl.String).str.contains("(?i)" + _HINT).fill_null(False)
    at = hinted.arg_true().cast(pl.UInt32)
    if at.len() == 0:
        return pl.Series("marks", [None] * names.len(), pl.String)
    name_text = pl.DataFrame({"i": at, "t": folded(names.gather(at))})
    line_text = pl.DataFrame({"i": at, "t": folded(lines.gather(at))})
    parts = [*_name_marks(name_text), *_qualifier_marks(name_text), *_qualifier_marks(line_text)]
    found = (
        pl.concat([p.cast(_LONG) for p in parts]).unique()
        .group_by("i").agg(pl.col("mark").sort().str.join("|").alias("marks"))
    )  # fmt: skip
    rows = pl.DataFrame({"i": pl.int_range(names.len(), dtype=pl.UInt32, eager=True)})
    joined = rows.join(found, on="i", how="left", maintain_order="left")
    return joined.get_column("marks")


def street_parts(lines: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(street_number, rest) of each street line: the first house number with its hyphenated
    parts kept ("2-4-1"), a "No."/"Nr." before it and the unit, level and gate clauses left
    out (null when none); and the folded line without those clauses and that number."""
    text = folded(lines).str.replace_all(r"\b(?:no|nr|num|number)\s*\.?\s*(\d)", " $1")
    at = text.str.contains(_HINT).fill_null(False).arg_true()
    if at.len():
        text = text.scatter(at, _signed(text.gather(at)).str.replace_all(_ANY_MARK, " "))
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
