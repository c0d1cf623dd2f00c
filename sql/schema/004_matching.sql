-- 004_matching: fuzzy dedupe audit columns on run_rows, and the pairs users marked not-a-match.

alter table run_rows add column matched_row bigint;
alter table run_rows add column match_rule varchar;
alter table run_rows add column match_probability double;

comment on column run_rows.matched_row is 'For a duplicate: the row_ord of the row it matched (exact key: the first row of the key; probabilistic: the first row of the place it matched most probably).';
comment on column run_rows.match_rule is 'For a duplicate: exact (same place_key) or probabilistic (the fuzzy pass).';
comment on column run_rows.match_probability is 'For a duplicate: the match probability of the pair it matched by (at least the threshold, 0.99, for probabilistic); 1 for exact.';

create table not_a_match (
    place_key_a varchar not null,
    place_key_b varchar not null,
    noted_at timestamp with time zone not null default current_timestamp,
    note varchar,
    primary key (place_key_a, place_key_b),
    check (place_key_a < place_key_b)
);

comment on table not_a_match is 'Pairs of places a person marked as different: the fuzzy pass never merges them.';
comment on column not_a_match.place_key_a is 'The smaller place_key of the pair (each place''s own exact key, as `placeflow not-a-match` was given it).';
comment on column not_a_match.place_key_b is 'The larger place_key of the pair.';
comment on column not_a_match.noted_at is 'When the pair was marked (again: the latest mark).';
comment on column not_a_match.note is 'Why the two places differ, as the person who marked them wrote it; null when not given.';
