-- run_usage_explained: the credits a run's own ledger accounts for on the service right now:
-- per chunk, what it still holds (hold less release) or what it was charged, whichever is
-- more, plus what jobs created twice hold (kind possible, a chunk's known double charge);
-- how many of its chunks are in flight (sent, not yet settled); and the rows of chunks held
-- as uncertain (their answers lost: the most they may have cost), but chunk $chunk_no's.

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
        ) + coalesce(sum(credits) filter (where kind = 'possible'), 0) as credits
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

uncertain as (
    select coalesce(sum(rows), 0) as rows
    from jobs
    where run_id = $run_id and error_code = 'UNCERTAIN' and chunk_no <> $chunk_no
),

final as (
    select
        coalesce((select sum(credits) from per_chunk), 0) as credits,
        (select chunks from in_flight) as in_flight,
        (select rows from uncertain) as uncertain
)

select credits, in_flight, uncertain from final
