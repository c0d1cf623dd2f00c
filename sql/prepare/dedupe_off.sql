-- dedupe_off: the deduped places under --dedupe off: every staged place (pf_staged_places) is
-- sent as a place of its own; a repeat of an exact place_key (pf_dedupe_repeated) gets its
-- occurrence number ("pk_...-2" for the second row of the key), and nothing is a duplicate;
-- own_key keeps the key of the row's fields. A "duplicate of ..." note left by an earlier pass
-- is dropped.

with

places as (
    select * from pf_staged_places
),

firsts as (
    select
        place_key,
        first_row_ord
    from pf_dedupe_repeated
),

repeats as (
    select
        places.row_ord,
        row_number() over (partition by places.place_key order by places.row_ord) + 1 as nth
    from places
    inner join firsts on places.place_key = firsts.place_key
    where places.row_ord <> firsts.first_row_ord
)

select
    places.* replace (
        case
            when repeats.nth is null then places.place_key
            else places.place_key || '-' || repeats.nth
        end as place_key,
        nullif(
            regexp_replace(places.note, '^duplicate of row \d+ of [^;]*(; )?', ''), ''
        ) as note
    ),
    null::bigint as matched_row,
    null::varchar as match_rule,
    null::double as match_probability,
    'submitted' as disposition,
    places.row_ord as first_row_ord,
    places.place_key as own_key
from places
left join repeats on places.row_ord = repeats.row_ord
