-- dedupe_keys: the exact place_keys whose rows are not all simply sent (keys of several rows,
-- pf_dedupe_repeated; keys the fuzzy pass merged and the keys they merged into,
-- pf_dedupe_matches): for each, its own first row, the place that answers it and the first
-- row of that place's cluster (its row_ord, source_row and source_file, which a duplicate's
-- note names). A key the fuzzy pass merged is answered by its cluster's representative and
-- records the first row of the key it matched, by which rule and with what probability; any
-- other key answers itself. A key not listed is one row, sent as its own place. A cluster
-- whose representative is not among the staged places is a place already known in the
-- warehouse (answer_is_known): its first staged row is the one looked up and sent under it.

with

places as (
    select
        place_key,
        row_ord,
        source_row,
        source_file
    from pf_staged_places
),

repeated as (
    select place_key from pf_dedupe_repeated
),

matches as (
    select * from pf_dedupe_matches
),

listed as (
    select place_key from repeated
    union
    select place_key from matches
    union
    select cluster_key as place_key from matches
),

own_firsts as (
    select
        places.place_key,
        min(places.row_ord) as own_first_row_ord,
        arg_min(places.source_row, places.row_ord) as own_first_source_row,
        arg_min(places.source_file, places.row_ord) as own_first_source_file
    from places
    semi join listed on places.place_key = listed.place_key
    group by places.place_key
),

answered as (
    select
        own_firsts.*,
        coalesce(matches.cluster_key, own_firsts.place_key) as answer_key,
        matched.own_first_row_ord as merged_row,
        matches.match_rule as merged_rule,
        matches.match_probability as merged_probability
    from own_firsts
    left join matches on own_firsts.place_key = matches.place_key
    left join own_firsts as matched on matches.matched_key = matched.place_key
),

clusters as (
    select
        answer_key,
        min(own_first_row_ord) as first_row_ord,
        arg_min(own_first_source_row, own_first_row_ord) as first_source_row,
        arg_min(own_first_source_file, own_first_row_ord) as first_source_file
    from answered
    group by answer_key
)

select
    answered.place_key,
    answered.own_first_row_ord,
    answered.answer_key,
    answered.merged_row,
    answered.merged_rule,
    answered.merged_probability,
    clusters.first_row_ord,
    clusters.first_source_row,
    clusters.first_source_file,
    answered.answer_key not in (select place_key from own_firsts) as answer_is_known
from answered
inner join clusters on answered.answer_key = clusters.answer_key
