-- research_latest: the newest answer of each place and field over all research runs (whatever
-- its spec or status), with the spec hash to tell answers of different specs apart.

create or replace view research_latest as

with

answers as (
    select * from research_answers
),

final as (
    select
        place_key,
        field,
        field_sha,
        value,
        confidence,
        status,
        row_status,
        name_verdict,
        address_verdict,
        verified_name,
        verified_address,
        run_id,
        researched_at,
        loaded_at
    from answers
    qualify row_number() over (
        partition by place_key, field
        order by loaded_at desc, run_id desc
    ) = 1
)

select * from final;

comment on view research_latest is 'The newest research answer of each place and field over all runs.';
comment on column research_latest.place_key is 'The place.';
comment on column research_latest.field is 'The attribute.';
comment on column research_latest.field_sha is 'Hash of the attribute''s spec the answer was asked with.';
comment on column research_latest.value is 'The value as JSON; null when abstained, capped, rejected or errored.';
comment on column research_latest.confidence is 'high, medium or low; null without a value.';
comment on column research_latest.status is 'confirmed, estimated, unconfirmed, cost_capped, rejected, or error.';
comment on column research_latest.row_status is 'enriched, abstain, error or cost_capped.';
comment on column research_latest.name_verdict is 'Identity verdict on the name (verify_identity).';
comment on column research_latest.address_verdict is 'Identity verdict on the address (verify_identity).';
comment on column research_latest.verified_name is 'The name the row was researched against.';
comment on column research_latest.verified_address is 'The address the row was researched against.';
comment on column research_latest.run_id is 'The run that produced the answer.';
comment on column research_latest.researched_at is 'The service''s timestamp of the answer.';
comment on column research_latest.loaded_at is 'When placeflow loaded the answer.';
