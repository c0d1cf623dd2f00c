-- 015 claims (issue 32): one place, one purchase, whoever runs. A place another unfinished run
-- is buying (same answer, chunk not yet loaded) is not bought again: the later run's row is
-- `claimed` and waits for that run's answer. runs records who carries a run out (host, pid,
-- heartbeat) so a claim of a live run is waited for and one of a dead run passes to its resume,
-- and how many rows were claimed. run_rows also keeps each row's own key (before a merge).

create table run_rows_015 (
    run_id varchar not null,
    row_ord bigint not null,
    source_file varchar not null,
    source_row bigint not null,
    source_id varchar,
    place_key varchar,
    disposition varchar not null
        check (disposition in ('submitted', 'duplicate', 'skipped_fresh', 'held_failing',
                               'claimed', 'rejected')),
    note varchar,
    matched_row bigint,
    match_rule varchar,
    match_probability double,
    outcome_key varchar,
    core_key varchar,
    own_key varchar,
    claimed_by varchar,
    poi_name varchar,
    street varchar,
    address varchar,
    city varchar,
    region varchar,
    postcode varchar,
    country varchar,
    latitude double,
    longitude double,
    check ((disposition = 'rejected') = (place_key is null))
);

insert into run_rows_015 by name select * from run_rows order by run_id, row_ord;

drop table run_rows;

alter table run_rows_015 rename to run_rows;

comment on table run_rows is 'Every input row of every run with its disposition: nothing is silently dropped.';
comment on column run_rows.run_id is 'The run that read the row.';
comment on column run_rows.row_ord is '0-based position of the row over all the run''s inputs, in reading order.';
comment on column run_rows.source_file is 'The input file the row came from.';
comment on column run_rows.source_row is 'The row''s 1-based data row number in its file (header excluded).';
comment on column run_rows.source_id is 'The user''s own identifier column of the row, if the input had one.';
comment on column run_rows.place_key is 'Stable hash of the place''s normalised identity; null when rejected.';
comment on column run_rows.disposition is 'submitted (its place is sent by this run), duplicate (an earlier row has the same place_key), skipped_fresh (a fresh outcome exists), held_failing (its place failed several times in a row; sent again only with --retry-failed), claimed (another unfinished run is buying the same answer: this run waits for it instead of paying again; the note names that run) or rejected.';
comment on column run_rows.note is 'Detail of the disposition: the reject reason, the row a duplicate repeats, a repair made, or the earlier place a fresh outcome came from.';
comment on column run_rows.matched_row is 'For a duplicate: the row_ord of the row it matched (exact key: the first row of the key; probabilistic: the first row of the place it matched most probably).';
comment on column run_rows.match_rule is 'For a duplicate: exact (same place_key) or probabilistic (the fuzzy pass).';
comment on column run_rows.match_probability is 'For a probabilistic duplicate: the match probability of the pair; 1 for exact.';
comment on column run_rows.outcome_key is 'The place_key whose outcomes answer the row: its own, or an earlier key of the same place matched without region and postcode; null when rejected.';
comment on column run_rows.own_key is 'The place_key of the row''s own fields, before dedupe merged it into another place (place_key then names the place it became); null when rejected and for rows of runs before migration 015.';
comment on column run_rows.claimed_by is 'For a claimed row: the unfinished run that was buying its place (its answer is that run''s once loaded); null otherwise.';
comment on column run_rows.core_key is 'Hash of the place''s identity without region and postcode: survives a newly filled region or postcode; null when rejected.';
comment on column run_rows.poi_name is 'The row''s name as normalised (sent); null when rejected.';
comment on column run_rows.street is 'The row''s street line as normalised.';
comment on column run_rows.address is 'The row''s unstructured address as normalised.';
comment on column run_rows.city is 'The row''s city as normalised.';
comment on column run_rows.region is 'The row''s region (state, province) as normalised.';
comment on column run_rows.postcode is 'The row''s postcode as normalised (lost leading zeros restored).';
comment on column run_rows.country is 'The row''s ISO 3166-1 alpha-2 country.';
comment on column run_rows.latitude is 'The row''s latitude as sent (repaired, or null when dropped).';
comment on column run_rows.longitude is 'The row''s longitude as sent (repaired, or null when dropped).';

alter table runs add column claimed bigint default 0;
alter table runs add column owner_host varchar;
alter table runs add column owner_pid bigint;
alter table runs add column heartbeat_at timestamptz;

comment on column runs.claimed is 'Input rows whose place another unfinished run was buying (the same answer): not bought again, answered when that run loads it.';
comment on column runs.owner_host is 'The host of the process carrying the run out (the last to open or resume it).';
comment on column runs.owner_pid is 'The process id carrying the run out on owner_host.';
comment on column runs.heartbeat_at is 'When that process last said it was alive (it beats while it waits on the service); a claim of a run whose process is gone passes to its resume.';
