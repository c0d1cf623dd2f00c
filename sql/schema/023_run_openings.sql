-- 023 run openings (issue 47): a large run's plan (its rows, rejects, matches and places with
-- their requests) is written in parts, each a short hold of the warehouse, before the hold that
-- records the run and claims its places; until then the run has no `runs` row and this table
-- names it, so that every reader across runs leaves its parts out. A run whose opening stopped
-- (a crash, a plan that changed, a refusal) is swept by its owner, or by a later run once the
-- owner is gone (placeflow.state.opening).

create table run_openings (
    run_id varchar not null primary key,
    owner_host varchar not null,
    owner_pid bigint not null,
    started_at timestamptz not null
);

comment on table run_openings is 'Runs whose plan is being written in parts (rows, rejects, matches, places): their rows in run_rows, rejects, run_matches and run_places are not part of the warehouse yet, and every reader across runs leaves them out; the row goes in the transaction that records the run (or sweeps its parts).';
comment on column run_openings.run_id is 'The run being opened (it has no runs row yet).';
comment on column run_openings.owner_host is 'The host of the process writing the parts.';
comment on column run_openings.owner_pid is 'That process''s id: a later run sweeps the parts of an opening whose process is gone (on this host), or whose lease file has not beaten for placeflow.state.lease.LEASE (on another).';
comment on column run_openings.started_at is 'When the first part was written.';
