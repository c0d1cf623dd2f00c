-- null_status_rows: a run's enrich rows charged only because their status object was present
-- with every value in it null (no attribute value, no operational status): the row shape a
-- service may read the bulk billing rule as not billing.

with

outcomes as (
    select *
    from enrichments
    where run_id = $run_id
),

final as (
    select count(*) as rows
    from outcomes
    where billable
        and existence_confidence is null
        and operational_status is null
        and closure_confidence is null
        and opening_hours_value is null
        and phone_number is null
        and website_url is null
        and facebook_url is null
        and facebook_handle is null
        and instagram_url is null
        and instagram_handle is null
        and tiktok_url is null
        and tiktok_handle is null
        and email_address is null
)

select rows from final
