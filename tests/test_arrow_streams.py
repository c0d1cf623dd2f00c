"""Frames cross to DuckDB and back as Arrow streams, without pyarrow (placeflow.support.arrow)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import duckdb
import polars as pl

from placeflow.support.arrow import Scannable, fetched, scannable


def test_a_registered_frame_is_read_by_every_scan_with_its_types() -> None:
    """A frame registered as a stream is read whole by each statement that scans it (twice in
    one statement here), with its types as DuckDB gives them."""
    frame = pl.DataFrame(
        {
            "k": ["a", "b", None],
            "n": [1, 2, 3],
            "at": [datetime(2026, 1, 1, tzinfo=UTC)] * 3,
            "d": [date(2026, 1, 2)] * 3,
            "l": [["x"], [], None],
        }
    )
    con = duckdb.connect()
    view = scannable(frame)
    assert isinstance(view, Scannable)
    con.register("v", view)
    assert con.execute("select count(*) from v").fetchall() == [(3,)]
    assert con.execute("select count(*) from v a join v b using (n)").fetchall() == [(3,)]
    types = dict(con.execute("select column_name, column_type from (describe v)").fetchall())
    assert types == {
        "k": "VARCHAR", "n": "BIGINT", "at": "TIMESTAMP WITH TIME ZONE", "d": "DATE",
        "l": "VARCHAR[]",
    }  # fmt: skip
    con.execute("create table t as select * from v")
    back = fetched(con.sql("select * from t order by n"))
    assert back.equals(con.sql("select * from t order by n").pl())
    assert back.with_columns(pl.col("at").dt.convert_time_zone("UTC")).equals(frame)


def test_a_column_of_nulls_alone_crosses_as_before() -> None:
    """A frame with a column of polars' Null type (which DuckDB refuses from a stream) goes
    through pyarrow, and DuckDB reads that column as its NULL type, as it always did."""
    frame = pl.DataFrame({"k": ["a", "b"], "gone": [None, None]})
    con = duckdb.connect()
    con.register("v", scannable(frame))
    types = dict(con.execute("select column_name, column_type from (describe v)").fetchall())
    assert types == {"k": "VARCHAR", "gone": '"NULL"'}
    assert con.execute("select count(*) from v where gone is null").fetchall() == [(2,)]
    for column, value in (("l", [None]), ("s", {"a": None})):  # a list of nulls, a struct of one
        con.register("w", scannable(pl.DataFrame({column: [value, value]})))
        assert con.execute("select count(*) from w").fetchall() == [(2,)], column


def test_a_fetched_relation_is_the_frame_duckdb_would_give() -> None:
    """`fetched` gives what `relation.pl()` gives, empty results with their columns too."""
    con = duckdb.connect()
    sql = "select i, 'p' || i as s, i / 2 as h from range(5) r(i) where i < $n order by i"
    for n in (5, 0):
        got = fetched(con.sql(sql, params={"n": n}))
        assert got.equals(con.sql(sql, params={"n": n}).pl()) and got.height == n
        assert got.columns == ["i", "s", "h"]
