-- plan_batches: where each batch of places to send begins: the row_ord of every
-- $per_batch-th submitted row of the staged plan (pf_staged_marked), in input order. The plan
-- stage builds the requests of one batch of whole chunks at a time, between two of them.

with

submitted as (
    select row_ord
    from pf_staged_marked
    where disposition = 'submitted'
),

numbered as (
    select
        row_ord,
        row_number() over (order by row_ord) - 1 as place_no
    from submitted
)

select row_ord
from numbered
where place_no % $per_batch = 0
order by row_ord
