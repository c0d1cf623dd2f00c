-- plan_batch: the places to send whose row_ord is in [$low, $high) ($high null: to the end),
-- with what their requests carry, in input order.

select
    row_ord,
    place_key,
    poi_name,
    street,
    address,
    city,
    region,
    postcode,
    country,
    latitude,
    longitude,
    core_key
from pf_staged_marked
where
    disposition = 'submitted'
    and row_ord >= $low
    and row_ord < coalesce($high::bigint, 9223372036854775807)

