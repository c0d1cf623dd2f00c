-- lines_enrich: enrich result files (gzipped JSON Lines, one POIEnrichResponse per line in
-- chunk order) as enrichments rows, line by line (position: the line's, from 0). The files:
-- sql/load/file_enrich.sql once per file, joined by `union all` (a batch's files in one
-- statement). Parameters: those of the files, $run_id, $loaded_at, $attributes_requested (see
-- chunk_context), $bill_null_status. Unknown fields and attributes are ignored; enum-like
-- fields stay text; an attribute missing from a line is null. Attributes come as
-- EnrichedAttribute (value, as_of, confidence) or ResultCell (value, confidence, status): one
-- shape holds both. Every text the server sent is stored capped (server_text, 2,000
-- characters and a marker); attribute values are kept as the JSON they came as.
-- Billable is judged on the spec's fields alone (issue 34): a value of a requested
-- attribute, an existence_confidence, an operational status value, or (the null-status
-- reading, $bill_null_status) a status object carrying the spec's existence_confidence even
-- as null. A field the spec never names (a status object of only `x_ext`) bills nothing.

with

result_lines as (
    {files}
),

flattened as (
    select
        chunk_no,
        line_no::integer as position,
        id as place_key,
        coalesce(success, false) as success,
        case
            when status is null or json_type(status) = 'OBJECT'
                then (status ->> 'existence_confidence')::double
            else error('status is ' || json_type(status) || ', not an object')
        end as existence_confidence,
        server_text(operational_status.status) as operational_status,
        operational_status.closure_confidence as closure_confidence,
        server_text(operational_status.closure_reason) as closure_reason,
        server_text(place_summary) as place_summary,
        attributes.opening_hours.value as opening_hours_value,
        server_text(attributes.opening_hours.confidence) as opening_hours_confidence,
        try_cast(attributes.opening_hours.as_of as date) as opening_hours_as_of,
        server_text(attributes.opening_hours.status) as opening_hours_status,
        attributes.phone.value as phone_value,
        server_text(attributes.phone.confidence) as phone_confidence,
        try_cast(attributes.phone.as_of as date) as phone_as_of,
        server_text(attributes.phone.status) as phone_status,
        attributes.website.value as website_value,
        server_text(attributes.website.confidence) as website_confidence,
        try_cast(attributes.website.as_of as date) as website_as_of,
        server_text(attributes.website.status) as website_status,
        attributes.facebook.value as facebook_value,
        server_text(attributes.facebook.confidence) as facebook_confidence,
        try_cast(attributes.facebook.as_of as date) as facebook_as_of,
        server_text(attributes.facebook.status) as facebook_status,
        attributes.instagram.value as instagram_value,
        server_text(attributes.instagram.confidence) as instagram_confidence,
        try_cast(attributes.instagram.as_of as date) as instagram_as_of,
        server_text(attributes.instagram.status) as instagram_status,
        attributes.tiktok.value as tiktok_value,
        server_text(attributes.tiktok.confidence) as tiktok_confidence,
        try_cast(attributes.tiktok.as_of as date) as tiktok_as_of,
        server_text(attributes.tiktok.status) as tiktok_status,
        attributes.email.value as email_value,
        server_text(attributes.email.confidence) as email_confidence,
        try_cast(attributes.email.as_of as date) as email_as_of,
        server_text(attributes.email.status) as email_status,
        server_text(coalesce(
            attributes.phone.value ->> 'number',
            json_string(attributes.phone.value)
        )) as phone_number,
        server_text(coalesce(
            attributes.website.value ->> 'url',
            json_string(attributes.website.value)
        )) as website_url,
        server_text(social_url(attributes.facebook.value)) as facebook_url,
        server_text(social_handle(attributes.facebook.value)) as facebook_handle,
        server_text(social_url(attributes.instagram.value)) as instagram_url,
        server_text(social_handle(attributes.instagram.value)) as instagram_handle,
        server_text(social_url(attributes.tiktok.value)) as tiktok_url,
        server_text(social_handle(attributes.tiktok.value)) as tiktok_handle,
        server_text(coalesce(
            attributes.email.value ->> 'email',
            json_string(attributes.email.value)
        )) as email_address,
        server_text(error) as error,
        server_text(error_code) as error_code,
        server_text(request_id) as request_id,
        try_cast(enrichment_timestamp as timestamptz) as enriched_at,
        coalesce(success, false)
            and (
                attributes.opening_hours.value is not null
                or attributes.phone.value is not null
                or attributes.website.value is not null
                or attributes.facebook.value is not null
                or attributes.instagram.value is not null
                or attributes.tiktok.value is not null
                or attributes.email.value is not null
                or (status ->> 'existence_confidence') is not null
                or (
                    coalesce(json_exists(status, '$.existence_confidence'), false)
                    and $bill_null_status
                )
                or operational_status.status is not null
                or operational_status.closure_confidence is not null
                or operational_status.closure_reason is not null
            ) as billable
    from result_lines
),

final as (
    select
        $run_id as run_id,
        flattened.*,
        $attributes_requested as attributes_requested,
        $loaded_at as loaded_at
    from flattened
)

select * from final
