-- verify: each chunk's outcome rows beside the places planned for it, for a batch of chunks in
-- one statement. Per chunk: how many rows, succeeded and billable, and how many carry another
-- place than the one planned at their position, with the first of those (its position, the id
-- it carries, the id planned there). The rows read are the outcome table's, or a reading of
-- result files (sql/load/lines_*.sql) in parentheses: either has the outcome columns. A chunk
-- without a row has no row here. Parameters: $run_id, $chunks (the chunks' numbers, a list)
-- and those of a reading.

with

written as (
    select
        chunk_no,
        position,
        place_key,
        success,
        billable
    from {rows}
    where run_id = $run_id and list_contains($chunks, chunk_no)
),

chunk_places as (
    select
        chunk_no,
        position,
        place_key
    from run_places
    where run_id = $run_id and list_contains($chunks, chunk_no)
),

compared as (
    select
        written.chunk_no,
        written.position,
        written.place_key,
        written.success,
        written.billable,
        chunk_places.place_key as expected_key,
        written.place_key is distinct from chunk_places.place_key as wrong
    from written
    left join chunk_places
        on written.chunk_no = chunk_places.chunk_no and written.position = chunk_places.position
)

select
    chunk_no,
    count(*) as rows,
    count(*) filter (where success) as succeeded,
    count(*) filter (where billable) as billable,
    count(*) filter (where wrong) as wrong,
    min(struct_pack(line := position, got := place_key, expected := expected_key))
        filter (where wrong) as first_wrong
from compared
group by chunk_no
