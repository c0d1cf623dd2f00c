-- 013 plan without indexes (issue 18): run_rows and run_places lose their primary-key and
-- unique indexes. A run writes a million rows to each at once, and DuckDB built and kept two
-- indexes of a million keys per run (time at the write, memory for as long as the database is
-- open). The plan stage makes each key once; the checks run_rows_count_mismatch (row_ord) and
-- run_places_duplicate (place_key, chunk position) watch for repeats instead. The not-null and
-- check constraints stay.

create table run_rows_013 (
    run_id varchar not null,
    row_ord bigint not null,
    source_file varchar not null,
    source_row bigint not null,
    source_id varchar,
    place_key varchar,
    disposition varchar not null
        check (disposition in ('submitted', 'duplicate', 'skipped_fresh', 'held_failing',
                               'rejected')),
    note varchar,
    matched_row bigint,
    match_rule varchar,
    match_probability double,
    outcome_key varchar,
    core_key varchar,
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

insert into run_rows_013 by name select * from run_rows order by run_id, row_ord;

drop table run_rows;

alter table run_rows_013 rename to run_rows;

comment on table run_rows is 'Every input row of every run with its disposition: nothing is silently dropped.';
comment on column run_rows.run_id is 'The run that read the row.';
comment on column run_rows.row_ord is '0-based position of the row over all the run''s inputs, in reading order.';
comment on column run_rows.source_file is 'The input file the row came from.';
comment on column run_rows.source_row is 'The row''s 1-based data row number in its file (header excluded).';
comment on column run_rows.source_id is 'The user''s own identifier column of the row, if the input had one.';
comment on column run_rows.place_key is 'Stable hash of the place''s normalised identity; null when rejected.';
comment on column run_rows.disposition is 'submitted (its place is sent by this run), duplicate (an earlier row has the same place_key), skipped_fresh (a fresh outcome exists), held_failing (its place failed several times in a row; sent again only with --retry-failed) or rejected.';
comment on column run_rows.note is 'Detail of the disposition: the reject reason, the row a duplicate repeats, a repair made, or the earlier place a fresh outcome came from.';
comment on column run_rows.matched_row is 'For a duplicate: the row_ord of the row it matched (exact key: the first row of the key; probabilistic: the first row of the place it matched most probably).';
comment on column run_rows.match_rule is 'For a duplicate: exact (same place_key) or probabilistic (the fuzzy pass).';
comment on column run_rows.match_probability is 'For a probabilistic duplicate: the match probability of the pair; 1 for exact.';
comment on column run_rows.outcome_key is 'The place_key whose outcomes answer the row: its own, or an earlier key of the same place matched without region and postcode; null when rejected.';
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

create table run_places_013 (
    run_id varchar not null,
    place_key varchar not null,
    chunk_no integer not null,
    position integer not null check (position >= 0),
    request varchar not null,
    core_key varchar
);

insert into run_places_013 by name select * from run_places order by run_id, chunk_no, position;

drop table run_places;

alter table run_places_013 rename to run_places;

comment on table run_places is 'The unique places a run sends, each with its chunk, position and the exact request.';
comment on column run_places.run_id is 'The run that sends the place.';
comment on column run_places.place_key is 'The place''s key; the request''s id.';
comment on column run_places.chunk_no is 'The chunk (bulk job or synchronous batch) the place is sent in.';
comment on column run_places.position is '0-based line of the place in its chunk (and in the chunk''s result file).';
comment on column run_places.request is 'The exact JSON object sent for the place; its id is the place_key.';
comment on column run_places.core_key is 'Hash of the place''s identity without region and postcode (see run_rows.core_key).';
