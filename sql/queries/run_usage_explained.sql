-- run_usage_explained: the credits a run's own ledger accounts for on the service right now:
-- per chunk, what it still holds (hold less release) or what it was charged, whichever is
-- more, plus what jobs created twice hold (kind possible, a chunk's known double charge: one
-- job of its rows, the least it is known to hold, though each lost attempt may have made one);
-- how many of its chunks are in flight (sent, not yet settled); and the rows of chunks held
-- as uncertain (their answers lost: the most they may have cost), but chunk $chunk_no's.

with

entries as (
    select chunk_no, kind, credits
    from credit_ledger
    where run_id = $run_id and chunk_no is not null
),

chunk_rows as (
    select chunk_no, rows
    from jobs
    where run_id = $run_id
),

per_chunk as (
    select
        entries.chunk_no,
        greatest(
            coalesce(sum(entries.credits) filter (where entries.kind = 'hold'), 0)
                - coalesce(sum(entries.credits) filter (where entries.kind = 'release'), 0),
            coalesce(sum(entries.credits) filter (where entries.kind = 'charge'), 0)
        ) + least(
            coalesce(sum(entries.credits) filter (where entries.kind = 'possible'), 0),
            coalesce(any_value(chunk_rows.rows), 0)
        ) as credits
    from entries
    left join chunk_rows on entries.chunk_no = chunk_rows.chunk_no
    group by entries.chunk_no
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
