-- report_verdicts: what the service said, per subject: the answer itself (answered, or failed
-- with its error code), the closure reason of closed places, and for an enrich run each
-- attribute's confidence (high, medium, low; 'not found' when the cell is empty).
-- Parameters: $run_id.

with

outcomes as (
    select
        success,
        operational_status,
        closure_reason,
        error_code
    from place_outcomes
    where run_id = $run_id
),

enriched as (
    select
        attributes_requested,
        opening_hours_confidence,
        phone_confidence,
        website_confidence,
        facebook_confidence,
        instagram_confidence,
        tiktok_confidence,
        email_confidence
    from enrichments
    where run_id = $run_id and success
),

-- the answered enrichments counted by what they asked and found (a few hundred rows at most),
-- so the unpivot and the split below work on combinations, not on places
combinations as (
    select
        *,
        count(*) as places
    from enriched
    group by all
),

answers as (
    select
        'answer' as subject,
        case when success then 'answered' else 'failed: ' || coalesce(error_code, 'error') end
            as verdict,
        count(*) as places
    from outcomes
    group by all
),

closures as (
    select
        'closure reason' as subject,
        coalesce(closure_reason, 'unspecified') as verdict,
        count(*) as places
    from outcomes
    where success and operational_status = 'closed'
    group by all
),

attribute_cells as (
    unpivot (select * exclude (attributes_requested) from combinations)
    on columns('_confidence$')
    into name attribute value confidence
),

attributes as (
    select
        replace(attribute, '_confidence', '') as subject,
        confidence as verdict,
        sum(places)::bigint as places
    from attribute_cells
    group by all
),

asked as (
    select
        attributes_requested,
        sum(places) as places
    from combinations
    group by attributes_requested
),

requested_subjects as (
    select
        unnest(string_split(attributes_requested, ',')) as subject,
        places
    from asked
),

requested as (
    select
        subject,
        sum(places) as places
    from requested_subjects
    group by subject
),

not_found as (
    select
        requested.subject,
        'not found' as verdict,
        requested.places - coalesce(sum(attributes.places), 0) as places
    from requested
    left join attributes on requested.subject = attributes.subject
    where requested.subject not in ('existence', 'open_closed')
    group by requested.subject, requested.places
),

final as (
    select * from answers
    union all
    select * from closures
    union all
    select * from attributes
    union all
    select * from not_found where places > 0
)

select * from final
order by subject, places desc, verdict
