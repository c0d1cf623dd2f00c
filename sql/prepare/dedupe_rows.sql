-- dedupe_rows: the deduped places (--dedupe exact or fuzzy): each staged place
-- (pf_staged_places) with place_key the key of the place that answers it (pf_dedupe_keys;
-- a key not listed there is one row, sent as its own place), what it matched (an exact
-- repeat: its own key's first row, rule exact, probability 1; the first row of a key the fuzzy
-- pass merged: the first row of the key it matched), disposition (the first row of a cluster
-- is submitted, the rest are duplicates) and first_row_ord; own_key keeps the row's own key.
-- A duplicate's note names the row it repeats, before any note the row already had (a
-- "duplicate of ..." left by an earlier pass is dropped first); the first row of a cluster
-- answered by a place already known in the warehouse (a key not among the staged places) says
-- so.

with

places as (
    select * from pf_staged_places
),

keys as (
    select * from pf_dedupe_keys
),

joined as (
    select
        places.*,
        keys.own_first_row_ord,
        keys.answer_key,
        keys.merged_row,
        keys.merged_rule,
        keys.merged_probability,
        keys.first_source_row,
        keys.first_source_file,
        keys.answer_is_known,
        coalesce(keys.first_row_ord, places.row_ord) as first_row_ord,
        coalesce(places.row_ord <> keys.own_first_row_ord, false) as is_repeat,
        nullif(
            regexp_replace(places.note, '^duplicate of row \d+ of [^;]*(; )?', ''), ''
        ) as earlier_note
    from places
    left join keys on places.place_key = keys.place_key
)

select
    * exclude (
        own_first_row_ord,
        answer_key,
        merged_row,
        merged_rule,
        merged_probability,
        first_row_ord,
        first_source_row,
        first_source_file,
        answer_is_known,
        is_repeat,
        earlier_note
    ) replace (
        coalesce(answer_key, place_key) as place_key,
        case
            when row_ord = first_row_ord and answer_is_known then concat(
                'the same place as ' || answer_key || ', already known in the warehouse',
                '; ' || earlier_note
            )
            when row_ord = first_row_ord then earlier_note
            else concat(
                'duplicate of row ' || first_source_row || ' of ' || first_source_file,
                '; ' || earlier_note
            )
        end as note
    ),
    case
        when is_repeat then own_first_row_ord
        else merged_row
    end as matched_row,
    case
        when is_repeat then 'exact'
        else merged_rule
    end as match_rule,
    case
        when is_repeat then 1.0::double
        else merged_probability
    end as match_probability,
    case
        when row_ord = first_row_ord then 'submitted'
        else 'duplicate'
    end as disposition,
    first_row_ord,
    place_key as own_key
from joined
