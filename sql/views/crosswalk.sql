-- crosswalk: every input row of every run (place runs and research runs), from the user's own
-- identifier (source_id) and file position to the place it became (place_key), with how it
-- got there: its own key before dedupe (own_key), its disposition and the match that merged
-- it. One row per run_rows row; run_opened_at (when its run was opened, the same for every row
-- of the run) is what an export's watermark follows: a run's rows are written with it, once.
-- The rows of a run still being opened (run_openings) are left out until it is recorded.

create or replace view crosswalk as

with

openings as (
    select run_id from run_openings
),

-- the rows of a run being opened (run_openings: its plan written in parts, no runs row yet) are
-- not part of the warehouse until the transaction that records the run: left out here
rows_ as (
    select run_rows.*
    from run_rows
    anti join openings on run_rows.run_id = openings.run_id
),

opened as (
    select
        run_id,
        created_at
    from runs
),

final as (
    select
        rows_.run_id,
        rows_.row_ord,
        rows_.source_file,
        rows_.source_row,
        rows_.source_id,
        rows_.own_key,
        rows_.place_key,
        rows_.disposition,
        rows_.match_rule,
        rows_.match_probability,
        rows_.matched_row,
        coalesce(rows_.outcome_key, rows_.place_key) as outcome_key,
        opened.created_at as run_opened_at
    from rows_
    left join opened on rows_.run_id = opened.run_id
)

select * from final;

comment on view crosswalk is 'Every input row of every run, from the user''s id and file position to the place it became: what a warehouse user joins their own records on. A run still being opened (run_openings) is left out until it is recorded.';
comment on column crosswalk.run_id is 'The run that read the row (a place run or a research run).';
comment on column crosswalk.row_ord is '0-based position of the row over all the run''s inputs, in reading order.';
comment on column crosswalk.source_file is 'The input file the row came from.';
comment on column crosswalk.source_row is 'The row''s 1-based data row number in its file (header excluded).';
comment on column crosswalk.source_id is 'The user''s own identifier of the row (the input''s id column), if it had one.';
comment on column crosswalk.own_key is 'The place_key of the row''s own fields, before dedupe merged it into another place; null when rejected and for rows of runs before migration 015.';
comment on column crosswalk.place_key is 'The place the row became (after dedupe): join places_latest and place_history on it; null when rejected.';
comment on column crosswalk.disposition is 'submitted, duplicate, skipped_fresh, held_failing, claimed or rejected (run_rows.disposition).';
comment on column crosswalk.match_rule is 'For a duplicate: exact (same place_key) or probabilistic (the fuzzy pass).';
comment on column crosswalk.match_probability is 'For a probabilistic duplicate: the match probability; 1 for exact.';
comment on column crosswalk.matched_row is 'For a duplicate: the row_ord of the row it matched.';
comment on column crosswalk.outcome_key is 'The place_key whose outcome answers the row (its place, or an earlier key of the same place a fresh outcome was found under); null when rejected.';
comment on column crosswalk.run_opened_at is 'When the row''s run was opened (its rows are written then, once): the export watermark of this table.';
