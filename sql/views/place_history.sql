-- place_history: every version of every place (slowly changing dimension, type 2). A place's
-- first successful outcome opens its first version; a later successful outcome opens a new one
-- when it changed a field (by the noise rules of place_fact_changed, as place_changes records)
-- or answered a field for the first time. A version holds, per field, the newest answer known
-- when it opened, and lasts until the next version opens (valid_to null: current). What was
-- known about a place at time T: valid_from <= T and (valid_to is null or T < valid_to). Each
-- version carries the place's identity as the run that opened it sent it (run_places.request).

create or replace view place_history as

with

facts as (
    select * from place_facts
),

sequenced as (
    select
        *,
        lag(run_id) over answers as prev_run_id,
        lag(compare_key) over answers as prev_key,
        lag(latitude) over answers as prev_latitude,
        lag(longitude) over answers as prev_longitude
    from facts
    window answers as (partition by place_key, field order by outcome_at, run_id)
),

openings as (
    select
        place_key,
        run_id,
        outcome_at
    from sequenced
    where prev_run_id is null
        or place_fact_changed(
            field, compare_key, prev_key, latitude, longitude, prev_latitude, prev_longitude
        )
    group by place_key, run_id, outcome_at
),

checks as (
    select distinct
        place_key,
        run_id,
        outcome_at
    from facts
),

versions as (
    select
        place_key,
        run_id,
        outcome_at as valid_from,
        lead(outcome_at) over places as valid_to,
        row_number() over places as version
    from openings
    window places as (partition by place_key order by outcome_at, run_id)
),

known as (
    select
        versions.place_key,
        versions.version,
        facts.field,
        facts.value
    from versions
    inner join facts
        on versions.place_key = facts.place_key
        and (
            facts.outcome_at < versions.valid_from
            or (facts.outcome_at = versions.valid_from and facts.run_id <= versions.run_id)
        )
    qualify row_number() over (
        partition by versions.place_key, versions.version, facts.field
        order by facts.outcome_at desc, facts.run_id desc
    ) = 1
),

known_wide as (
    select
        place_key,
        version,
        max(value) filter (where field = 'operational_status') as operational_status,
        max(value) filter (where field = 'closure_reason') as closure_reason,
        max(value) filter (where field = 'existence') as existence,
        max(value) filter (where field = 'opening_hours') as opening_hours,
        max(value) filter (where field = 'phone') as phone,
        max(value) filter (where field = 'website') as website,
        max(value) filter (where field = 'facebook') as facebook,
        max(value) filter (where field = 'instagram') as instagram,
        max(value) filter (where field = 'tiktok') as tiktok,
        max(value) filter (where field = 'email') as email,
        max(value) filter (where field = 'address') as address,
        max(value) filter (where field = 'coordinates') as coordinates
    from known
    group by place_key, version
),

last_checks as (
    select
        versions.place_key,
        versions.version,
        max(checks.outcome_at) as last_checked_at
    from versions
    inner join checks
        on versions.place_key = checks.place_key
        and checks.outcome_at >= versions.valid_from
        and (versions.valid_to is null or checks.outcome_at < versions.valid_to)
    group by versions.place_key, versions.version
),

identity as (
    select
        run_id,
        place_key,
        request ->> 'poi_name' as poi_name,
        request ->> 'street' as street,
        request ->> 'address' as address_line,
        request ->> 'city' as city,
        request ->> 'region' as region,
        request ->> 'postcode' as postcode,
        request ->> 'country' as country,
        try_cast(request ->> 'latitude' as double) as latitude,
        try_cast(request ->> 'longitude' as double) as longitude
    from run_places
),

final as (
    select
        versions.place_key,
        versions.version,
        versions.valid_from,
        versions.valid_to,
        versions.valid_to is null as is_current,
        versions.run_id,
        last_checks.last_checked_at,
        known_wide.operational_status,
        known_wide.closure_reason,
        known_wide.existence,
        known_wide.opening_hours,
        known_wide.phone,
        known_wide.website,
        known_wide.facebook,
        known_wide.instagram,
        known_wide.tiktok,
        known_wide.email,
        known_wide.address,
        known_wide.coordinates,
        identity.poi_name,
        identity.street,
        identity.address_line,
        identity.city,
        identity.region,
        identity.postcode,
        identity.country,
        identity.latitude,
        identity.longitude
    from versions
    left join known_wide
        on versions.place_key = known_wide.place_key and versions.version = known_wide.version
    left join last_checks
        on versions.place_key = last_checks.place_key and versions.version = last_checks.version
    left join identity
        on versions.run_id = identity.run_id and versions.place_key = identity.place_key
)

select * from final;

comment on view place_history is 'Every version of every place (SCD type 2): what was known from valid_from until valid_to.';
comment on column place_history.place_key is 'The place.';
comment on column place_history.version is '1 for the place''s first successful outcome, then one more per outcome that changed or first answered a field.';
comment on column place_history.valid_from is 'When the outcome that opened the version was loaded.';
comment on column place_history.valid_to is 'When the next version opened; null for the current version.';
comment on column place_history.is_current is 'Whether this is the place''s current version (valid_to is null).';
comment on column place_history.run_id is 'The run whose outcome opened the version.';
comment on column place_history.last_checked_at is 'The newest successful outcome that found the place as this version says (a re-check without change does not open a version).';
comment on column place_history.operational_status is 'open, closed, unknown or not_exists, as last answered.';
comment on column place_history.closure_reason is 'Why closed, as last answered; null unless closed.';
comment on column place_history.existence is 'likely (existence confidence 0.5 or more) or unlikely, as last answered.';
comment on column place_history.opening_hours is 'Opening hours as JSON, as last answered; null when not found or never asked.';
comment on column place_history.phone is 'Phone number, as last answered.';
comment on column place_history.website is 'Website URL, as last answered.';
comment on column place_history.facebook is 'Facebook URL (else handle), as last answered.';
comment on column place_history.instagram is 'Instagram URL (else handle), as last answered.';
comment on column place_history.tiktok is 'TikTok URL (else handle), as last answered.';
comment on column place_history.email is 'Email address, as last answered.';
comment on column place_history.address is 'The address fields sent for the place (street, address, city, region, postcode, country).';
comment on column place_history.coordinates is 'The coordinates sent for the place, as latitude,longitude.';
comment on column place_history.poi_name is 'The place''s name as the run that opened the version sent it.';
comment on column place_history.street is 'The street line as that run sent it.';
comment on column place_history.address_line is 'The unstructured address as that run sent it (address above joins every address field).';
comment on column place_history.city is 'The city as that run sent it.';
comment on column place_history.region is 'The region (state, province) as that run sent it.';
comment on column place_history.postcode is 'The postcode as that run sent it.';
comment on column place_history.country is 'The ISO 3166-1 alpha-2 country as that run sent it.';
comment on column place_history.latitude is 'The latitude as that run sent it; null when none was.';
comment on column place_history.longitude is 'The longitude as that run sent it; null when none was.';
