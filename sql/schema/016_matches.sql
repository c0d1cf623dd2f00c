-- 016 matches (issue 33): dedupe you can trust, every merge explainable. The fuzzy pass now
-- matches a run's places against each other and against the places earlier runs sent; each
-- row it merged is recorded here with the evidence of the merge (every comparison's level and
-- match weight, as Splink scored the pair), so a person can review it. run_rows.own_key (since
-- 015) is filled from this migration on: the key of the row's own fields, before a merge; and
-- run_rows keeps each row's phone and website (match-only fields, never sent), so that a later
-- run's places are matched against the known ones with the same evidence as within a run.

create table run_matches (
    run_id varchar not null,
    row_ord bigint not null,
    own_key varchar not null,
    answer_key varchar not null,
    matched_key varchar not null,
    matched_row bigint,
    matched_run_id varchar,
    match_rule varchar not null,
    match_probability double not null,
    evidence json
);

comment on table run_matches is 'Every input row the fuzzy dedupe merged into another place (of the same run, or one already known in the warehouse), with the evidence of the merge: one row per merged place of a run (the first row of its own key; the key''s other rows repeat it exactly).';
comment on column run_matches.run_id is 'The run that read the row.';
comment on column run_matches.row_ord is 'The row (run_rows.row_ord of the run).';
comment on column run_matches.own_key is 'The place_key of the row''s own fields (run_rows.own_key): the place that was merged.';
comment on column run_matches.answer_key is 'The place that answers the row since the merge (run_rows.place_key): its cluster''s first place, or the place already known in the warehouse that the cluster joined.';
comment on column run_matches.matched_key is 'The place the row''s own place was merged with: the place of its cluster it matched most probably, whose comparison the probability and evidence are.';
comment on column run_matches.matched_row is 'The first row of matched_key in this run (run_rows.row_ord); null when matched_key is a place already known in the warehouse.';
comment on column run_matches.matched_run_id is 'For a place already known in the warehouse: the newest earlier run that sent matched_key; null for a place of this run.';
comment on column run_matches.match_rule is 'How the pair was matched: probabilistic (the fuzzy pass, Splink).';
comment on column run_matches.match_probability is 'The match probability of the pair (at least the run''s --match-threshold).';
comment on column run_matches.evidence is 'JSON: each comparison''s name -> {level: the label of the level the pair fell in, weight: its match weight (log2 of its Bayes factor; positive for a match)}, as Splink scored the pair; the hard rules (phones, ids, numbers, units, levels, terminals, branch names, chains) had let it through.';

alter table run_rows add column phone varchar;
alter table run_rows add column website varchar;

comment on column run_rows.phone is 'The row''s phone as read (never sent: a match-only field): the fuzzy dedupe of later runs matches their places against this row''s by it; null when the input had none, and for rows of runs before migration 016.';
comment on column run_rows.website is 'The row''s website as read (never sent: a match-only field), for the fuzzy dedupe of later runs; null when the input had none, and for rows of runs before migration 016.';
