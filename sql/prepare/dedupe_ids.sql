-- dedupe_ids: a directory's own ids are its authority. Rows of one input file that share an
-- exact place_key but carry different ids (pf_staged_places: source_file, source_id) are
-- different places (two stores listed at one address without their unit): each such row's
-- place_key and core_key are made its own, from the key and its id ('pk_'/'ck_' and the first
-- 24 hex digits of MD5 over the key, 'id' and the id, joined by U+001F), the same in every run.
-- Rows without an id, and ids repeated with the key, keep their key. Not run when the run says
-- ids may repeat places (--ids-may-repeat-places).

update pf_staged_places as places
set
    place_key = 'pk_' || left(md5(places.place_key || chr(31) || 'id' || chr(31) || places.source_id), 24),
    core_key = 'ck_' || left(md5(coalesce(places.core_key, '') || chr(31) || 'id' || chr(31) || places.source_id), 24)
from (
    select
        source_file,
        place_key
    from pf_staged_places
    where source_id is not null
    group by source_file, place_key
    having count(distinct source_id) > 1
) as shared
where
    places.source_file = shared.source_file
    and places.place_key = shared.place_key
    and places.source_id is not null
