-- stale_places: every place the warehouse knows (sent by some run) whose newest successful
-- outcome answering a request of $signature (signature_answers) was loaded at or before $cutoff,
-- or that no such outcome answered yet, and that no attempt of the same kind (a failed one
-- included) tried after $cutoff: a place that failed an hour ago is not due again for a
-- refresh of places older than a day (sql/queries/failing_places.sql finds those that keep
-- failing). Optionally only places of $country. Each place comes
-- with what a refresh needs to send it again: the request its latest run sent (verbatim, and
-- rebuilt for $signature), its fields, and what ranks it when the budget is short: the age of
-- its answer, its verdict, its past changes and its failures since the last success; and
-- claimed_by, the oldest unfinished run buying it now (the same answer, its chunk not yet
-- settled), which a refresh leaves it to (one place, one purchase).
-- Parameters: $signature, $cutoff, $country (null: all), $now.

with

wanted as (
    select
        split_part($signature, '|', 1) as mode,
        signature_attributes($signature) as attributes,
        split_part($signature, '|', 3) = 'summary' as include_summary
),

sent as (
    select
        run_places.place_key,
        run_places.run_id,
        run_places.request,
        runs.created_at
    from run_places
    inner join runs on run_places.run_id = runs.run_id
),

latest_sent as (
    select
        place_key,
        run_id as sent_run_id,
        request as stored_request
    from sent
    qualify row_number() over (
        partition by place_key order by created_at desc, run_id desc
    ) = 1
),

outcomes as (
    select
        place_key,
        run_id,
        signature,
        success,
        operational_status,
        existence_confidence,
        outcome_at
    from place_outcomes
),

answers as (
    select
        place_key,
        run_id as answered_run_id,
        outcome_at as answered_at
    from outcomes
    where success and signature_answers(signature, $signature)
    qualify row_number() over (
        partition by place_key order by outcome_at desc, run_id desc
    ) = 1
),

attempts as (
    select
        place_key,
        max(outcome_at) as attempted_at
    from outcomes
    where signature_answers(signature, $signature)
    group by place_key
),

verdicts as (
    select
        place_key,
        operational_status,
        existence_confidence
    from outcomes
    where success and operational_status is not null
    qualify row_number() over (
        partition by place_key order by outcome_at desc, run_id desc
    ) = 1
),

last_success as (
    select
        place_key,
        max(outcome_at) as succeeded_at
    from outcomes
    where success
    group by place_key
),

failures as (
    select
        outcomes.place_key,
        count(*) as failures_in_a_row
    from outcomes
    left join last_success on outcomes.place_key = last_success.place_key
    where not outcomes.success
        and (last_success.succeeded_at is null or outcomes.outcome_at > last_success.succeeded_at)
    group by outcomes.place_key
),

claims as (
    select
        place_key,
        run_id as claimed_by
    from place_claims
    where signature_answers(signature, $signature)
    qualify row_number() over (partition by place_key order by created_at, run_id) = 1
),

past_changes as (
    select
        place_key,
        count(distinct run_id) as changes_before
    from place_changes
    group by place_key
),

places as (
    select
        latest_sent.place_key,
        latest_sent.sent_run_id,
        latest_sent.stored_request,
        answers.answered_run_id,
        answers.answered_at,
        attempts.attempted_at,
        date_diff('second', answers.answered_at, $now::timestamptz) / 86400.0 as age_days,
        verdicts.operational_status,
        verdicts.existence_confidence,
        coalesce(past_changes.changes_before, 0) as changes_before,
        coalesce(failures.failures_in_a_row, 0) as failures_in_a_row,
        claims.claimed_by
    from latest_sent
    left join answers on latest_sent.place_key = answers.place_key
    left join attempts on latest_sent.place_key = attempts.place_key
    left join verdicts on latest_sent.place_key = verdicts.place_key
    left join past_changes on latest_sent.place_key = past_changes.place_key
    left join failures on latest_sent.place_key = failures.place_key
    left join claims on latest_sent.place_key = claims.place_key
    where (answers.answered_at is null or answers.answered_at <= $cutoff)
        and (attempts.attempted_at is null or attempts.attempted_at <= $cutoff)
        and (
            cast($country as varchar) is null
            or upper(latest_sent.stored_request ->> 'country') = upper($country)
        )
),

-- Likely to have changed: old answers (a point per 30 days, at most 4), never answered (5),
-- an unknown verdict (1.5), low existence confidence (below 0.6: 1), each earlier run that
-- found a change (0.75, at most 3 of them).
ranked as (
    select
        *,
        case when answered_at is null then 5.0 else least(age_days / 30.0, 4.0) end
            + case when lower(operational_status) = 'unknown' then 1.5 else 0 end
            + case when existence_confidence < 0.6 then 1.0 else 0 end
            + 0.75 * least(changes_before, 3) as priority,
        concat_ws('; ',
            case
                when answered_at is null then 'never answered'
                else printf('answered %.0f days ago', age_days)
            end,
            case when lower(operational_status) = 'unknown' then 'status unknown' end,
            case when existence_confidence < 0.6
                then printf('low existence confidence %.2f', existence_confidence) end,
            case when changes_before > 0 then printf('changed in %d earlier run(s)', changes_before) end
        ) as reason
    from places
),

final as (
    select
        ranked.place_key,
        json_merge_patch(
            json_merge_patch(ranked.stored_request, '{"attributes": null, "include_summary": null}'),
            case
                when wanted.mode = 'enrich' and wanted.include_summary
                    then json_object('attributes', wanted.attributes, 'include_summary', true)
                when wanted.mode = 'enrich' then json_object('attributes', wanted.attributes)
                else '{}'::json
            end
        )::varchar as request,
        ranked.stored_request,
        ranked.sent_run_id,
        ranked.stored_request ->> 'poi_name' as poi_name,
        ranked.stored_request ->> 'street' as street,
        ranked.stored_request ->> 'address' as address,
        ranked.stored_request ->> 'city' as city,
        ranked.stored_request ->> 'region' as region,
        ranked.stored_request ->> 'postcode' as postcode,
        ranked.stored_request ->> 'country' as country,
        try_cast(ranked.stored_request ->> 'latitude' as double) as latitude,
        try_cast(ranked.stored_request ->> 'longitude' as double) as longitude,
        ranked.answered_run_id,
        ranked.answered_at,
        ranked.attempted_at,
        ranked.age_days,
        ranked.operational_status,
        ranked.existence_confidence,
        ranked.changes_before,
        ranked.failures_in_a_row,
        ranked.priority,
        ranked.reason,
        ranked.claimed_by
    from ranked
    cross join wanted
)

select * from final
