-- place_claims: the places unfinished runs are buying now: each place planned by a run that is
-- running or interrupted, in a chunk not yet settled (neither loaded nor failed), with that
-- run's signature, so a later run or refresh whose request it answers leaves the place to it
-- (sql/queries/claimed_places.sql, stale_places.sql): one place, one purchase, whoever runs.

create or replace view place_claims as

with

open_runs as (
    select
        run_id,
        signature,
        created_at
    from runs
    where status in ('running', 'interrupted')
),

unsettled as (
    select
        run_id,
        chunk_no
    from jobs
    where status not in ('loaded', 'failed')
),

final as (
    select
        run_places.place_key,
        open_runs.run_id,
        run_places.chunk_no,
        open_runs.signature,
        open_runs.created_at
    from run_places
    inner join open_runs on run_places.run_id = open_runs.run_id
    inner join unsettled
        on run_places.run_id = unsettled.run_id
        and run_places.chunk_no = unsettled.chunk_no
)

select * from final;

comment on view place_claims is 'The places unfinished runs are buying now (planned in a chunk not yet loaded or failed): a later run or refresh whose request their answer answers leaves them to that run.';
comment on column place_claims.place_key is 'The place being bought.';
comment on column place_claims.run_id is 'The unfinished run buying it (running or interrupted).';
comment on column place_claims.chunk_no is 'The chunk of that run the place is planned in (a chunk claims its places until it is loaded or failed).';
comment on column place_claims.signature is 'That run''s request signature (what its answer answers: signature_answers).';
comment on column place_claims.created_at is 'When that run was opened (the oldest claim of a place wins).';
