-- places_latest: per place, the latest of each kind of fact. The verdict columns (mode ...
-- outcome_at) come from the newest successful outcome that answered the verdict (a validation,
-- or an enrichment that asked for existence or open_closed), else the newest successful one,
-- else the newest failed one (so a place that only ever failed shows its error). Each enrichment
-- attribute comes from the newest successful enrichment that asked for it: a validation run does
-- not hide the phone an enrichment found, nor does a newer failed outcome hide an older value.
-- The place's identity (name, address fields, country, coordinates) is what the latest run that
-- sent the place sent (run_places.request), so a warehouse user sees which place a key is.

create or replace view places_latest as

with

outcomes as (
    select * from place_outcomes
),

enrichment_rows as (
    select
        *,
        string_split(coalesce(attributes_requested, ''), ',') as asked
    from enrichments
),

verdicts as (
    select *
    from outcomes
    qualify row_number() over (
        partition by place_key
        order by
            case
                when success and (
                    mode = 'validate'
                    or list_has_any(signature_attributes(signature), ['existence', 'open_closed'])
                ) then 0
                when success then 1
                else 2
            end,
            outcome_at desc,
            run_id desc,
            mode
    ) = 1
),

latest_attributes as (
    select
        place_key,
        arg_max(attributes_requested, (success, loaded_at, run_id)) as attributes_requested,
        arg_max(place_summary, (loaded_at, run_id))
            filter (where success and place_summary is not null) as place_summary,
        arg_max({'opening_hours_value': opening_hours_value, 'opening_hours_confidence': opening_hours_confidence, 'opening_hours_as_of': opening_hours_as_of, 'opening_hours_status': opening_hours_status}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'opening_hours')) as opening_hours,
        arg_max({'phone_value': phone_value, 'phone_confidence': phone_confidence, 'phone_as_of': phone_as_of, 'phone_status': phone_status, 'phone_number': phone_number}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'phone')) as phone,
        arg_max({'website_value': website_value, 'website_confidence': website_confidence, 'website_as_of': website_as_of, 'website_status': website_status, 'website_url': website_url}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'website')) as website,
        arg_max({'facebook_value': facebook_value, 'facebook_confidence': facebook_confidence, 'facebook_as_of': facebook_as_of, 'facebook_status': facebook_status, 'facebook_url': facebook_url, 'facebook_handle': facebook_handle}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'facebook')) as facebook,
        arg_max({'instagram_value': instagram_value, 'instagram_confidence': instagram_confidence, 'instagram_as_of': instagram_as_of, 'instagram_status': instagram_status, 'instagram_url': instagram_url, 'instagram_handle': instagram_handle}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'instagram')) as instagram,
        arg_max({'tiktok_value': tiktok_value, 'tiktok_confidence': tiktok_confidence, 'tiktok_as_of': tiktok_as_of, 'tiktok_status': tiktok_status, 'tiktok_url': tiktok_url, 'tiktok_handle': tiktok_handle}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'tiktok')) as tiktok,
        arg_max({'email_value': email_value, 'email_confidence': email_confidence, 'email_as_of': email_as_of, 'email_status': email_status, 'email_address': email_address}, (loaded_at, run_id))
            filter (where success and list_contains(asked, 'email')) as email
    from enrichment_rows
    group by place_key
),

-- the latest run that sent each place (only keys in the aggregate: the requests are read after)
last_sent as (
    select
        run_places.place_key,
        arg_max(run_places.run_id, (runs.created_at, run_places.run_id)) as run_id
    from run_places
    inner join runs on run_places.run_id = runs.run_id
    group by run_places.place_key
),

identity as (
    select
        last_sent.place_key,
        run_places.request ->> 'poi_name' as poi_name,
        run_places.request ->> 'street' as street,
        run_places.request ->> 'address' as address,
        run_places.request ->> 'city' as city,
        run_places.request ->> 'region' as region,
        run_places.request ->> 'postcode' as postcode,
        run_places.request ->> 'country' as country,
        try_cast(run_places.request ->> 'latitude' as double) as latitude,
        try_cast(run_places.request ->> 'longitude' as double) as longitude
    from last_sent
    inner join run_places
        on last_sent.run_id = run_places.run_id and last_sent.place_key = run_places.place_key
),

final as (
    select
        verdicts.place_key,
        verdicts.mode,
        verdicts.signature,
        verdicts.run_id,
        verdicts.success,
        verdicts.operational_status,
        verdicts.existence_confidence,
        verdicts.closure_confidence,
        verdicts.closure_reason,
        verdicts.error,
        verdicts.error_code,
        verdicts.service_at,
        verdicts.outcome_at,
        latest_attributes.attributes_requested,
        latest_attributes.place_summary,
        latest_attributes.opening_hours.opening_hours_value as opening_hours_value,
        latest_attributes.opening_hours.opening_hours_confidence as opening_hours_confidence,
        latest_attributes.opening_hours.opening_hours_as_of as opening_hours_as_of,
        latest_attributes.opening_hours.opening_hours_status as opening_hours_status,
        latest_attributes.phone.phone_value as phone_value,
        latest_attributes.phone.phone_confidence as phone_confidence,
        latest_attributes.phone.phone_as_of as phone_as_of,
        latest_attributes.phone.phone_status as phone_status,
        latest_attributes.website.website_value as website_value,
        latest_attributes.website.website_confidence as website_confidence,
        latest_attributes.website.website_as_of as website_as_of,
        latest_attributes.website.website_status as website_status,
        latest_attributes.facebook.facebook_value as facebook_value,
        latest_attributes.facebook.facebook_confidence as facebook_confidence,
        latest_attributes.facebook.facebook_as_of as facebook_as_of,
        latest_attributes.facebook.facebook_status as facebook_status,
        latest_attributes.instagram.instagram_value as instagram_value,
        latest_attributes.instagram.instagram_confidence as instagram_confidence,
        latest_attributes.instagram.instagram_as_of as instagram_as_of,
        latest_attributes.instagram.instagram_status as instagram_status,
        latest_attributes.tiktok.tiktok_value as tiktok_value,
        latest_attributes.tiktok.tiktok_confidence as tiktok_confidence,
        latest_attributes.tiktok.tiktok_as_of as tiktok_as_of,
        latest_attributes.tiktok.tiktok_status as tiktok_status,
        latest_attributes.email.email_value as email_value,
        latest_attributes.email.email_confidence as email_confidence,
        latest_attributes.email.email_as_of as email_as_of,
        latest_attributes.email.email_status as email_status,
        latest_attributes.phone.phone_number as phone_number,
        latest_attributes.website.website_url as website_url,
        latest_attributes.facebook.facebook_url as facebook_url,
        latest_attributes.facebook.facebook_handle as facebook_handle,
        latest_attributes.instagram.instagram_url as instagram_url,
        latest_attributes.instagram.instagram_handle as instagram_handle,
        latest_attributes.tiktok.tiktok_url as tiktok_url,
        latest_attributes.tiktok.tiktok_handle as tiktok_handle,
        latest_attributes.email.email_address as email_address,
        identity.poi_name,
        identity.street,
        identity.address,
        identity.city,
        identity.region,
        identity.postcode,
        identity.country,
        identity.latitude,
        identity.longitude
    from verdicts
    left join latest_attributes on verdicts.place_key = latest_attributes.place_key
    left join identity on verdicts.place_key = identity.place_key
)

select * from final;

comment on view places_latest is 'Per place, the latest of each kind of fact: the newest verdict (successful outcomes before failed ones) and, per enrichment attribute, the newest successful enrichment that asked for it.';
comment on column places_latest.place_key is 'The place.';
comment on column places_latest.mode is 'validate or enrich: the kind of the verdict''s outcome.';
comment on column places_latest.signature is 'The signature of the run that produced the outcome (mode|attributes|summary).';
comment on column places_latest.run_id is 'The run whose outcome gave the verdict.';
comment on column places_latest.success is 'Whether the service answered the place.';
comment on column places_latest.operational_status is 'open, closed, unknown, not_exists, or an unfamiliar value kept as sent.';
comment on column places_latest.existence_confidence is 'Confidence 0-1 that the place ever existed.';
comment on column places_latest.closure_confidence is 'Confidence 0-1 in a closed verdict.';
comment on column places_latest.closure_reason is 'Why closed; null unless closed.';
comment on column places_latest.error is 'The service''s error message for a failed row.';
comment on column places_latest.error_code is 'The service''s error_code for a failed row.';
comment on column places_latest.service_at is 'The service''s own timestamp of the outcome (validation_timestamp or enrichment_timestamp).';
comment on column places_latest.outcome_at is 'When placeflow loaded the outcome; freshness is measured from it.';
comment on column places_latest.attributes_requested is 'The attributes the newest successful enrichment asked for (else the newest failed one); null when never enriched.';
comment on column places_latest.place_summary is 'Short summary of the place (enrich with include_summary); null otherwise.';
comment on column places_latest.opening_hours_value is 'opening_hours value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.opening_hours_confidence is 'Confidence in opening_hours: high, medium, low.';
comment on column places_latest.opening_hours_as_of is 'Date the opening_hours value was last seen to hold.';
comment on column places_latest.opening_hours_status is 'Cell status of opening_hours (response_format cell).';
comment on column places_latest.phone_value is 'phone value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.phone_confidence is 'Confidence in phone: high, medium, low.';
comment on column places_latest.phone_as_of is 'Date the phone value was last seen to hold.';
comment on column places_latest.phone_status is 'Cell status of phone (response_format cell).';
comment on column places_latest.website_value is 'website value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.website_confidence is 'Confidence in website: high, medium, low.';
comment on column places_latest.website_as_of is 'Date the website value was last seen to hold.';
comment on column places_latest.website_status is 'Cell status of website (response_format cell).';
comment on column places_latest.facebook_value is 'facebook value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.facebook_confidence is 'Confidence in facebook: high, medium, low.';
comment on column places_latest.facebook_as_of is 'Date the facebook value was last seen to hold.';
comment on column places_latest.facebook_status is 'Cell status of facebook (response_format cell).';
comment on column places_latest.instagram_value is 'instagram value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.instagram_confidence is 'Confidence in instagram: high, medium, low.';
comment on column places_latest.instagram_as_of is 'Date the instagram value was last seen to hold.';
comment on column places_latest.instagram_status is 'Cell status of instagram (response_format cell).';
comment on column places_latest.tiktok_value is 'tiktok value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.tiktok_confidence is 'Confidence in tiktok: high, medium, low.';
comment on column places_latest.tiktok_as_of is 'Date the tiktok value was last seen to hold.';
comment on column places_latest.tiktok_status is 'Cell status of tiktok (response_format cell).';
comment on column places_latest.email_value is 'email value as JSON; from the newest successful enrichment that asked for it; null when not found or never asked.';
comment on column places_latest.email_confidence is 'Confidence in email: high, medium, low.';
comment on column places_latest.email_as_of is 'Date the email value was last seen to hold.';
comment on column places_latest.email_status is 'Cell status of email (response_format cell).';
comment on column places_latest.phone_number is 'The phone number. From the newest successful enrichment that asked for it.';
comment on column places_latest.website_url is 'The website URL. From the newest successful enrichment that asked for it.';
comment on column places_latest.facebook_url is 'The facebook page URL. From the newest successful enrichment that asked for it.';
comment on column places_latest.facebook_handle is 'The facebook handle. From the newest successful enrichment that asked for it.';
comment on column places_latest.instagram_url is 'The instagram URL. From the newest successful enrichment that asked for it.';
comment on column places_latest.instagram_handle is 'The instagram handle. From the newest successful enrichment that asked for it.';
comment on column places_latest.tiktok_url is 'The tiktok URL. From the newest successful enrichment that asked for it.';
comment on column places_latest.tiktok_handle is 'The tiktok handle. From the newest successful enrichment that asked for it.';
comment on column places_latest.email_address is 'The email address. From the newest successful enrichment that asked for it.';
comment on column places_latest.poi_name is 'The place''s name as last sent (run_places.request of the latest run that sent the place).';
comment on column places_latest.street is 'The street line as last sent.';
comment on column places_latest.address is 'The unstructured address as last sent.';
comment on column places_latest.city is 'The city as last sent.';
comment on column places_latest.region is 'The region (state, province) as last sent.';
comment on column places_latest.postcode is 'The postcode as last sent.';
comment on column places_latest.country is 'The ISO 3166-1 alpha-2 country as last sent.';
comment on column places_latest.latitude is 'The latitude as last sent; null when none was.';
comment on column places_latest.longitude is 'The longitude as last sent; null when none was.';
