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
        success,
        attributes_requested,
        opening_hours_confidence,
        phone_confidence,
        website_confidence,
        facebook_confidence,
        instagram_confidence,
        tiktok_confidence,
        email_confidence
    from enrichments
    where run_id = $run_id
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
    unpivot (select * from enriched where success)
    on columns('_confidence$')
    into name attribute value confidence
),

attributes as (
    select
        replace(attribute, '_confidence', '') as subject,
        confidence as verdict,
        count(*) as places
    from attribute_cells
    group by all
),

answered_enrichments as (
    select unnest(string_split(attributes_requested, ',')) as subject
    from enriched
    where success
),

requested as (
    select
        subject,
        count(*) as places
    from answered_enrichments
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
