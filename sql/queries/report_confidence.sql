-- report_confidence: the run's existence confidences in 20 bins of 0.05 (1.0 falls in the
-- last), for answered places that have one. Parameters: $run_id.

with

outcomes as (
    select existence_confidence
    from place_outcomes
    where run_id = $run_id and success and existence_confidence is not null
),

binned as (
    select least(floor(existence_confidence * 20), 19)::integer as bin
    from outcomes
),

final as (
    select
        bin,
        bin / 20.0 as lower_bound,
        count(*) as places
    from binned
    group by bin
)

select * from final
order by bin
