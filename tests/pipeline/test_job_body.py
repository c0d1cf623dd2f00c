"""A job's body as the pipeline sends it: the planned bytes, and rows the request model accepts.

The submit stage sends a chunk's stored body unparsed (`checked=True`), trusting the plan: these
tests prove the two things that trust rests on.
"""

from __future__ import annotations

import hashlib
import random

import duckdb
import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from placeflow.api.client import JOB_SUBMIT_MODELS
from placeflow.api.limits import require_json
from placeflow.options import RunOptions
from placeflow.pipeline.normalize import LIMITS, normalize
from placeflow.pipeline.plan import build_requests
from placeflow.pipeline.read import PLACE_FIELDS
from placeflow.state.records import chunk_body
from placeflow.state.runstate import RunState
from placeflow.store.warehouse import migrate
from tests.pipeline.conftest import read_frame

REQUESTS = [
    '{"id":"pk_1","poi_name":"Caf\u00e9 \\"Zo\u00eb\\" \\\\ \u6771\u4eac \U0001f600"}',
    '{"id":"pk_2","poi_name":"B","city":"K\u00f8benhavn","latitude":55.6,"longitude":12.5}',
    '{"id":"pk_3","poi_name":"C\\u0000?","attributes":["phone", "website"]}',
]


def test_chunk_body_is_the_planned_bytes_in_position_order() -> None:
    """Stored in any order, a chunk's requests come back as plan's exact body (non-ASCII and
    escapes byte for byte, so its sha256 is the planned content hash); no rows, an empty list."""
    con = duckdb.connect()
    migrate(con)
    rows = [("run_1", f"pk_{i}", 7, i, r) for i, r in enumerate(REQUESTS)]
    random.Random(3).shuffle(rows)
    con.executemany(
        "insert into run_places (run_id, place_key, chunk_no, position, request)"
        " values (?, ?, ?, ?, ?)",
        rows,
    )
    body = RunState(con, "run_1").chunk_body(7)
    assert body == chunk_body(REQUESTS)
    assert hashlib.sha256(body).hexdigest() == hashlib.sha256(chunk_body(REQUESTS)).hexdigest()
    assert RunState(con, "run_1").chunk_body(8) == chunk_body([]) == b'{"pois":[]}'


def _near_limits() -> st.SearchStrategy[str]:
    lengths = sorted({n + d for n in LIMITS.values() for d in (-1, 0, 1)})
    return st.builds(lambda n, c: c * n, st.sampled_from(lengths), st.sampled_from("x\u00e9 "))


texts = st.one_of(
    st.none(),
    st.sampled_from(["", "N/A", "usa", "DE", "Atlantis", "91", "-180", "1e3", "nan", "inf"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20),
    st.from_regex(r"-?[0-9]{1,3}(\.[0-9]{1,6})?", fullmatch=True),
    _near_limits(),
)
rows = st.lists(st.fixed_dictionaries({f: texts for f in PLACE_FIELDS}), min_size=1, max_size=12)


AT_LIMITS = {f: "\u00e9" * n for f, n in LIMITS.items()} | {"country": "fr"}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=rows)
@example(data=[AT_LIMITS, {**AT_LIMITS, "latitude": "-90", "longitude": "180.0"}])
def test_every_planned_row_holds_to_the_job_models(data: list[dict[str, str]]) -> None:
    """Whatever the input, the body planned from the rows normalize keeps passes the job's
    request model: nothing the client would refuse is ever stored to be sent unparsed."""
    places, _, _ = normalize(read_frame(*data))
    if not places.height:
        return
    keyed = places.with_columns(
        pl.format("pk_{}", pl.col("row_ord").cast(pl.String)).alias("place_key")
    )
    for mode in ("validate", "enrich"):
        options = RunOptions(mode=mode, include_summary=mode == "enrich")
        body = chunk_body(build_requests(keyed, options)["request"].to_list())
        require_json(JOB_SUBMIT_MODELS[mode], body, endpoint=f"POST /v1/jobs/{mode}")
