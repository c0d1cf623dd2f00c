-- verify: a chunk's outcome rows beside the places planned for it. How many rows, succeeded and
-- billable, and how many carry another place than the one planned at their position, with the
-- first of those (its position, the id it carries, the id planned there). The rows read are
-- the outcome table's, or a reading of a result file (sql/load/lines_*.sql) in parentheses:
-- either has the outcome columns. Parameters: $run_id, $chunk_no (and those of a reading).

with

written as (
    select
        position,
        place_key,
        success,
        billable
    from {rows}
    where run_id = $run_id and chunk_no = $chunk_no
),

chunk_places as (
    select
        position,
        place_key
    from run_places
    where run_id = $run_id and chunk_no = $chunk_no
),

compared as (
    select
        written.position,
        written.place_key,
        written.success,
        written.billable,
        chunk_places.place_key as expected_key,
        written.place_key is distinct from chunk_places.place_key as wrong
    from written
    left join chunk_places on written.position = chunk_places.position
)

select
    count(*) as rows,
    count(*) filter (where success) as succeeded,
    count(*) filter (where billable) as billable,
    count(*) filter (where wrong) as wrong,
    min(struct_pack(line := position, got := place_key, expected := expected_key))
        filter (where wrong) as first_wrong
from compared
