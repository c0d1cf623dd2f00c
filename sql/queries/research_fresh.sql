-- research_fresh: of the candidate places (registered frame research_fresh_candidates), those
-- with an answer loaded after $cutoff for every wanted field spec (registered frame
-- research_fresh_specs: field_sha), counting only answers a rerun need not buy again
-- (confirmed, estimated, unconfirmed). Parameter: $cutoff.

with

candidates as (
    select distinct place_key from research_fresh_candidates
),

specs as (
    select distinct field_sha from research_fresh_specs
),

usable as (
    select distinct
        research_answers.place_key,
        research_answers.field_sha
    from research_answers
    inner join specs on research_answers.field_sha = specs.field_sha
    where research_answers.status in ('confirmed', 'estimated', 'unconfirmed')
        and research_answers.loaded_at > $cutoff
),

final as (
    select candidates.place_key
    from candidates
    inner join usable on candidates.place_key = usable.place_key
    group by candidates.place_key
    having count(distinct usable.field_sha) = (select count(*) from specs)
)

select place_key from final
