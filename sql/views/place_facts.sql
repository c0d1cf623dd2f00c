-- place_facts: what each successful outcome told us, one row per answered field. A field is
-- answered when the outcome was asked for it: a validation answers operational_status,
-- closure_reason and existence; an enrichment answers them only when it asked for open_closed
-- (status, reason) or existence, and each value attribute only when it asked for it (a value
-- asked for and not found is a null answer). address and coordinates are what the run sent for
-- the place (run_places.request). Failed outcomes answer nothing.
-- compare_key is the value as compared for change detection (the noise rules): phone by its
-- digits, websites and profile URLs by host and path (no scheme, no www., no trailing slash,
-- case-folded), opening hours as a canonical weekday form, existence as a band (likely from
-- 0.5), address as case-folded words. Coordinates are compared by distance (place_fact_changed).

create or replace macro place_fact_distance_m(lat1, lon1, lat2, lon2) as
    2 * 6371008.8 * asin(sqrt(
        pow(sin(radians(lat2 - lat1) / 2), 2)
        + cos(radians(lat1)) * cos(radians(lat2)) * pow(sin(radians(lon2 - lon1) / 2), 2)
    ));

-- Whether a fact differs from the previous fact of the same place and field, by the noise rules.
create or replace macro place_fact_changed(
    field, compare_key, prev_key, latitude, longitude, prev_latitude, prev_longitude
) as
    case
        when field = 'coordinates' then
            case
                when latitude is null or prev_latitude is null
                    then (latitude is null) != (prev_latitude is null)
                else place_fact_distance_m(prev_latitude, prev_longitude, latitude, longitude) >= 50
            end
        -- a reason changes only from one closed verdict to another (open -> closed is a
        -- change of operational_status)
        when field = 'closure_reason' then
            compare_key is not null and prev_key is not null and compare_key != prev_key
        else compare_key is distinct from prev_key
    end;

create or replace macro place_fact_url_key(url) as
    nullif(
        rtrim(
            regexp_replace(
                regexp_replace(
                    regexp_replace(lower(trim(url)), '^[a-z][a-z0-9+.-]*://', ''),
                    '^www\.', ''),
                '[?#].*$', ''),
            '/'),
        '');

create or replace macro place_fact_day_key(day_hours) as
    case json_type(day_hours)
        when 'VARCHAR' then lower(day_hours ->> '$')
        when 'ARRAY' then nullif(array_to_string(list_sort(list_transform(
            from_json(day_hours, '[{"open": "VARCHAR", "close": "VARCHAR"}]'),
            lambda s: s.open || '-' || s.close)), ','), '')
    end;

create or replace view place_facts as

with

validation_rows as (
    select * from validations where success
),

enrichment_rows as (
    select
        *,
        string_split(coalesce(attributes_requested, ''), ',') as asked
    from enrichments
    where success
),

planned as (
    select
        run_id,
        place_key,
        request
    from run_places
),

status_answers as (
    select
        'validate' as mode, run_id, place_key, loaded_at as outcome_at,
        operational_status, closure_reason, existence_confidence,
        true as asked_status, true as asked_existence
    from validation_rows
    union all
    select
        'enrich' as mode, run_id, place_key, loaded_at as outcome_at,
        operational_status, closure_reason, existence_confidence,
        list_contains(asked, 'open_closed') as asked_status,
        list_contains(asked, 'existence') as asked_existence
    from enrichment_rows
),

status_facts as (
    select
        mode, run_id, place_key, outcome_at, 'operational_status' as field,
        operational_status as value, lower(operational_status) as compare_key
    from status_answers
    where asked_status and operational_status is not null
    union all
    select
        mode, run_id, place_key, outcome_at, 'closure_reason' as field,
        closure_reason as value,
        case when lower(operational_status) = 'closed' then lower(coalesce(closure_reason, 'unspecified')) end
            as compare_key
    from status_answers
    where asked_status and operational_status is not null
    union all
    select
        mode, run_id, place_key, outcome_at, 'existence' as field,
        case when existence_confidence >= 0.5 then 'likely' else 'unlikely' end as value,
        case when existence_confidence >= 0.5 then 'likely' else 'unlikely' end as compare_key
    from status_answers
    where asked_existence and existence_confidence is not null
),

-- opening hours keyed day by day: one row per weekday of an hours object, then joined up in
-- weekday order (set-based: a per-row expression of seven day keys costs ~1 ms a row)
opening_days as (
    select
        run_id,
        place_key,
        unnest(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'])
            as weekday,
        unnest(range(7)) as weekday_no,
        unnest(json_extract(opening_hours_value, [
            '$.days.monday', '$.days.tuesday', '$.days.wednesday', '$.days.thursday',
            '$.days.friday', '$.days.saturday', '$.days.sunday'
        ])) as day_hours
    from enrichment_rows
    where json_type(opening_hours_value, '$.days') = 'OBJECT'
),

hours_keys as (
    select
        run_id,
        place_key,
        string_agg(weekday || '=' || coalesce(place_fact_day_key(day_hours), ''), ';'
            order by weekday_no) as hours_key
    from opening_days
    group by run_id, place_key
),

attribute_answers as (
    select
        enrichment_rows.run_id, enrichment_rows.place_key, loaded_at as outcome_at, asked,
        opening_hours_value,
        -- an hours object by its days; any other shape as its JSON text
        coalesce(hours_keys.hours_key, json(opening_hours_value)::varchar) as hours_key,
        phone_number, website_url,
        coalesce(facebook_url, facebook_handle) as facebook,
        coalesce(instagram_url, instagram_handle) as instagram,
        coalesce(tiktok_url, tiktok_handle) as tiktok,
        email_address
    from enrichment_rows
    left join hours_keys
        on enrichment_rows.run_id = hours_keys.run_id
        and enrichment_rows.place_key = hours_keys.place_key
),

attribute_facts as (
    select
        run_id, place_key, outcome_at, 'opening_hours' as field,
        json(opening_hours_value)::varchar as value, hours_key as compare_key
    from attribute_answers
    where list_contains(asked, 'opening_hours')
    union all
    select
        run_id, place_key, outcome_at, 'phone' as field, phone_number as value,
        nullif(regexp_replace(phone_number, '[^0-9]', '', 'g'), '') as compare_key
    from attribute_answers
    where list_contains(asked, 'phone')
    union all
    select
        run_id, place_key, outcome_at, 'website' as field, website_url as value,
        place_fact_url_key(website_url) as compare_key
    from attribute_answers
    where list_contains(asked, 'website')
    union all
    select
        run_id, place_key, outcome_at, 'facebook' as field, facebook as value,
        place_fact_url_key(facebook) as compare_key
    from attribute_answers
    where list_contains(asked, 'facebook')
    union all
    select
        run_id, place_key, outcome_at, 'instagram' as field, instagram as value,
        place_fact_url_key(instagram) as compare_key
    from attribute_answers
    where list_contains(asked, 'instagram')
    union all
    select
        run_id, place_key, outcome_at, 'tiktok' as field, tiktok as value,
        place_fact_url_key(tiktok) as compare_key
    from attribute_answers
    where list_contains(asked, 'tiktok')
    union all
    select
        run_id, place_key, outcome_at, 'email' as field, email_address as value,
        lower(trim(email_address)) as compare_key
    from attribute_answers
    where list_contains(asked, 'email')
),

sent as (
    select
        answered.mode,
        answered.run_id,
        answered.place_key,
        answered.outcome_at,
        planned.request ->> 'street' as street,
        planned.request ->> 'address' as address,
        planned.request ->> 'city' as city,
        planned.request ->> 'region' as region,
        planned.request ->> 'postcode' as postcode,
        planned.request ->> 'country' as country,
        try_cast(planned.request ->> 'latitude' as double) as latitude,
        try_cast(planned.request ->> 'longitude' as double) as longitude
    from (
        select 'validate' as mode, run_id, place_key, loaded_at as outcome_at from validation_rows
        union all
        select 'enrich' as mode, run_id, place_key, loaded_at as outcome_at from enrichment_rows
    ) as answered
    inner join planned
        on answered.run_id = planned.run_id and answered.place_key = planned.place_key
),

location_facts as (
    select
        mode, run_id, place_key, outcome_at, 'address' as field,
        nullif(concat_ws(', ', street, address, city, region, postcode, country), '') as value,
        nullif(trim(regexp_replace(
            lower(concat_ws(' ', street, address, city, region, postcode, country)),
            '[^[:alnum:]]+', ' ', 'g')), '') as compare_key,
        null::double as latitude,
        null::double as longitude
    from sent
    union all
    select
        mode, run_id, place_key, outcome_at, 'coordinates' as field,
        case when latitude is not null and longitude is not null
            then printf('%.6f,%.6f', latitude, longitude) end as value,
        case when latitude is not null and longitude is not null
            then printf('%.6f,%.6f', latitude, longitude) end as compare_key,
        latitude,
        longitude
    from sent
),

final as (
    select
        mode, run_id, place_key, outcome_at, field, value, compare_key,
        null::double as latitude, null::double as longitude
    from status_facts
    union all
    select
        'enrich' as mode, run_id, place_key, outcome_at, field, value, compare_key,
        null::double as latitude, null::double as longitude
    from attribute_facts
    union all
    select
        mode, run_id, place_key, outcome_at, field, value, compare_key, latitude, longitude
    from location_facts
)

select * from final;

comment on view place_facts is 'What each successful outcome told us, one row per field it answered (failed outcomes answer nothing).';
comment on column place_facts.mode is 'validate or enrich: the kind of outcome.';
comment on column place_facts.run_id is 'The run whose outcome answered the field.';
comment on column place_facts.place_key is 'The place.';
comment on column place_facts.outcome_at is 'When placeflow loaded the outcome.';
comment on column place_facts.field is 'operational_status, closure_reason, existence, opening_hours, phone, website, facebook, instagram, tiktok, email, address or coordinates.';
comment on column place_facts.value is 'The answer as text (null: asked and not found); existence as likely (confidence 0.5 or more) or unlikely; address and coordinates as sent.';
comment on column place_facts.compare_key is 'The value as compared for change detection (the noise rules of docs/warehouse.md).';
comment on column place_facts.latitude is 'The latitude sent, for the coordinates field; null otherwise.';
comment on column place_facts.longitude is 'The longitude sent, for the coordinates field; null otherwise.';
