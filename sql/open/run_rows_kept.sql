-- run_rows_kept: the run_rows of the run being opened that normalize kept (its run_id is added
-- by the caller: placeflow.state.runstate.PLAN_ROWS), each with its disposition (submitted,
-- duplicate, skipped_fresh, held_failing, claimed), the place answering it (and the run buying
-- it, when claimed), its own key (before a merge), its normalised fields and its match-only
-- fields (phone, website), from the staged plan (pf_staged_marked).

select
    row_ord,
    source_file,
    source_row,
    source_id,
    place_key,
    disposition,
    note,
    matched_row,
    match_rule,
    match_probability,
    outcome_key,
    own_key,
    claimed_by,
    core_key,
    poi_name,
    street,
    address,
    city,
    region,
    postcode,
    country,
    latitude,
    longitude,
    phone,
    website
from pf_staged_marked
