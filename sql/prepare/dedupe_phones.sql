-- dedupe_phones: two different phones are two places, whatever else agrees. Rows that share an
-- exact place_key (pf_staged_places; the key holds no phone) but whose phones differ in their
-- last 7 digits (two departments listed at one address) are kept apart: each such row with a
-- phone gets a place_key and core_key of its own, from the key and those digits ('pk_'/'ck_'
-- and the first 24 hex digits of MD5 over the key, 'phone' and the digits, joined by U+001F),
-- the same in every run. Rows without a phone keep the key.

update pf_staged_places as places
set
    place_key = 'pk_' || left(md5(
        places.place_key || chr(31) || 'phone' || chr(31)
        || right(regexp_replace(places.phone, '[^0-9]', '', 'g'), 7)
    ), 24),
    core_key = 'ck_' || left(md5(
        coalesce(places.core_key, '') || chr(31) || 'phone' || chr(31)
        || right(regexp_replace(places.phone, '[^0-9]', '', 'g'), 7)
    ), 24)
from (
    select place_key
    from pf_staged_places
    where length(regexp_replace(phone, '[^0-9]', '', 'g')) >= 7
    group by place_key
    having count(distinct right(regexp_replace(phone, '[^0-9]', '', 'g'), 7)) > 1
) as shared
where
    places.place_key = shared.place_key
    and length(regexp_replace(places.phone, '[^0-9]', '', 'g')) >= 7
