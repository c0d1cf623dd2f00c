-- run_usage_explained: the credits a run's own ledger accounts for on the service right now:
-- per chunk, what it still holds (hold less release) or what it was charged, whichever is
-- more; and how many of its chunks are in flight (sent, not yet settled).

with

entries as (
    select chunk_no, kind, credits
    from credit_ledger
    where run_id = $run_id and chunk_no is not null
),

per_chunk as (
    select
        chunk_no,
        greatest(
            coalesce(sum(credits) filter (where kind = 'hold'), 0)
                - coalesce(sum(credits) filter (where kind = 'release'), 0),
            coalesce(sum(credits) filter (where kind = 'charge'), 0)
        ) as credits
    from entries
    group by chunk_no
),

in_flight as (
    select count(*) as chunks
    from jobs
    where run_id = $run_id
        and batch_id is not null
        and status in ('submitted', 'completed', 'cancelled', 'timed_out')
),

final as (
    select
        coalesce((select sum(credits) from per_chunk), 0) as credits,
        (select chunks from in_flight) as in_flight
)

select credits, in_flight from final
