-- chunk_context: what loading a batch of chunks needs to know before it reads their files.
-- Parameters: $run_id, $chunks (the chunks' numbers, a list). One row per chunk with planned
-- places: planned, how many places the chunk has in run_places; attributes_requested, the
-- attributes the run's enrich requests name, comma-separated (empty when they name none: the
-- service then answers its default list); bills_null_status, whether the run's service bills
-- a status object of only nulls (null when no balanced run taught it either way: the spec's
-- rule, read literally, says yes).

with

chunk_places as (
    select
        chunk_no,
        count(*) as planned
    from run_places
    where run_id = $run_id and list_contains($chunks, chunk_no)
    group by chunk_no
),

-- Every request of a run asks for the same attributes (the planner builds them from the run's
-- options), so the first request of the batch's first chunk speaks for all of its places.
chunk_attributes as (
    select
        array_to_string(json_extract_string(request, '$.attributes[*]'), ',') as attributes_requested
    from run_places
    where run_id = $run_id and chunk_no = list_min($chunks) and position = 0
),

null_status as (
    select bool_and(billing_readings.billed) as bills_null_status
    from billing_readings
    inner join runs on billing_readings.target = runs.target
    where runs.run_id = $run_id and billing_readings.shape = 'null_status'
)

select
    chunk_places.chunk_no,
    chunk_places.planned,
    chunk_attributes.attributes_requested,
    null_status.bills_null_status
from chunk_places
cross join null_status
left join chunk_attributes on true
