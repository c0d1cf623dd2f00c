-- places_latest: the newest outcome of each place_key over all runs (whatever its signature,
-- failed outcomes included), with the enrichment columns (null when the newest is a validation).

create or replace view places_latest as

with

outcomes as (
    select * from place_outcomes
),

enrichment_rows as (
    select * from enrichments
),

newest as (
    select *
    from outcomes
    qualify row_number() over (
        partition by place_key
        order by outcome_at desc, run_id desc, mode
    ) = 1
),

final as (
    select
        newest.place_key,
        newest.mode,
        newest.signature,
        newest.run_id,
        newest.success,
        newest.operational_status,
        newest.existence_confidence,
        newest.closure_confidence,
        newest.closure_reason,
        newest.error,
        newest.error_code,
        newest.service_at,
        newest.outcome_at,
        enrichment_rows.attributes_requested,
        enrichment_rows.place_summary,
        enrichment_rows.opening_hours_value,
        enrichment_rows.opening_hours_confidence,
        enrichment_rows.opening_hours_as_of,
        enrichment_rows.opening_hours_status,
        enrichment_rows.phone_value,
        enrichment_rows.phone_confidence,
        enrichment_rows.phone_as_of,
        enrichment_rows.phone_status,
        enrichment_rows.website_value,
        enrichment_rows.website_confidence,
        enrichment_rows.website_as_of,
        enrichment_rows.website_status,
        enrichment_rows.facebook_value,
        enrichment_rows.facebook_confidence,
        enrichment_rows.facebook_as_of,
        enrichment_rows.facebook_status,
        enrichment_rows.instagram_value,
        enrichment_rows.instagram_confidence,
        enrichment_rows.instagram_as_of,
        enrichment_rows.instagram_status,
        enrichment_rows.tiktok_value,
        enrichment_rows.tiktok_confidence,
        enrichment_rows.tiktok_as_of,
        enrichment_rows.tiktok_status,
        enrichment_rows.email_value,
        enrichment_rows.email_confidence,
        enrichment_rows.email_as_of,
        enrichment_rows.email_status,
        enrichment_rows.phone_number,
        enrichment_rows.website_url,
        enrichment_rows.facebook_url,
        enrichment_rows.facebook_handle,
        enrichment_rows.instagram_url,
        enrichment_rows.instagram_handle,
        enrichment_rows.tiktok_url,
        enrichment_rows.tiktok_handle,
        enrichment_rows.email_address
    from newest
    left join enrichment_rows
        on newest.mode = 'enrich'
        and newest.run_id = enrichment_rows.run_id
        and newest.place_key = enrichment_rows.place_key
)

select * from final;

comment on view places_latest is 'The newest outcome of each place over all runs, with the enrichment attribute columns (null when the newest is a validation).';
comment on column places_latest.place_key is 'The place.';
comment on column places_latest.mode is 'validate or enrich: the table the outcome comes from.';
comment on column places_latest.signature is 'The signature of the run that produced the outcome (mode|attributes|summary).';
comment on column places_latest.run_id is 'The run that produced the outcome.';
comment on column places_latest.success is 'Whether the service answered the place.';
comment on column places_latest.operational_status is 'open, closed, unknown, not_exists, or an unfamiliar value kept as sent.';
comment on column places_latest.existence_confidence is 'Confidence 0-1 that the place ever existed.';
comment on column places_latest.closure_confidence is 'Confidence 0-1 in a closed verdict.';
comment on column places_latest.closure_reason is 'Why closed; null unless closed.';
comment on column places_latest.error is 'The service''s error message for a failed row.';
comment on column places_latest.error_code is 'The service''s error_code for a failed row.';
comment on column places_latest.service_at is 'The service''s own timestamp of the outcome (validation_timestamp or enrichment_timestamp).';
comment on column places_latest.outcome_at is 'When placeflow loaded the outcome; freshness is measured from it.';
comment on column places_latest.attributes_requested is 'The attributes the enrich request asked for; null for a validation.';
comment on column places_latest.place_summary is 'Short summary of the place (enrich with include_summary); null otherwise.';
comment on column places_latest.opening_hours_value is 'opening_hours value as JSON; null for a validation or when not found.';
comment on column places_latest.opening_hours_confidence is 'Confidence in opening_hours: high, medium, low.';
comment on column places_latest.opening_hours_as_of is 'Date the opening_hours value was last seen to hold.';
comment on column places_latest.opening_hours_status is 'Cell status of opening_hours (response_format cell).';
comment on column places_latest.phone_value is 'phone value as JSON; null for a validation or when not found.';
comment on column places_latest.phone_confidence is 'Confidence in phone: high, medium, low.';
comment on column places_latest.phone_as_of is 'Date the phone value was last seen to hold.';
comment on column places_latest.phone_status is 'Cell status of phone (response_format cell).';
comment on column places_latest.website_value is 'website value as JSON; null for a validation or when not found.';
comment on column places_latest.website_confidence is 'Confidence in website: high, medium, low.';
comment on column places_latest.website_as_of is 'Date the website value was last seen to hold.';
comment on column places_latest.website_status is 'Cell status of website (response_format cell).';
comment on column places_latest.facebook_value is 'facebook value as JSON; null for a validation or when not found.';
comment on column places_latest.facebook_confidence is 'Confidence in facebook: high, medium, low.';
comment on column places_latest.facebook_as_of is 'Date the facebook value was last seen to hold.';
comment on column places_latest.facebook_status is 'Cell status of facebook (response_format cell).';
comment on column places_latest.instagram_value is 'instagram value as JSON; null for a validation or when not found.';
comment on column places_latest.instagram_confidence is 'Confidence in instagram: high, medium, low.';
comment on column places_latest.instagram_as_of is 'Date the instagram value was last seen to hold.';
comment on column places_latest.instagram_status is 'Cell status of instagram (response_format cell).';
comment on column places_latest.tiktok_value is 'tiktok value as JSON; null for a validation or when not found.';
comment on column places_latest.tiktok_confidence is 'Confidence in tiktok: high, medium, low.';
comment on column places_latest.tiktok_as_of is 'Date the tiktok value was last seen to hold.';
comment on column places_latest.tiktok_status is 'Cell status of tiktok (response_format cell).';
comment on column places_latest.email_value is 'email value as JSON; null for a validation or when not found.';
comment on column places_latest.email_confidence is 'Confidence in email: high, medium, low.';
comment on column places_latest.email_as_of is 'Date the email value was last seen to hold.';
comment on column places_latest.email_status is 'Cell status of email (response_format cell).';
comment on column places_latest.phone_number is 'The phone number. Null for a validation.';
comment on column places_latest.website_url is 'The website URL. Null for a validation.';
comment on column places_latest.facebook_url is 'The facebook page URL. Null for a validation.';
comment on column places_latest.facebook_handle is 'The facebook handle. Null for a validation.';
comment on column places_latest.instagram_url is 'The instagram URL. Null for a validation.';
comment on column places_latest.instagram_handle is 'The instagram handle. Null for a validation.';
comment on column places_latest.tiktok_url is 'The tiktok URL. Null for a validation.';
comment on column places_latest.tiktok_handle is 'The tiktok handle. Null for a validation.';
comment on column places_latest.email_address is 'The email address. Null for a validation.';
