-- run_merges: the merges the fuzzy pass made in run $run_id (run_matches), one row per merged
-- place, each side as the user knows it: the merged row and the row it was merged into (its
-- first row in this run, or the place already known in the warehouse: its newest earlier
-- row), file, row, id, name, street, city and phone; the probability and the evidence (each
-- comparison's level and match weight).

with

matches as (
    select * from run_matches where run_id = $run_id
),

rows_ as (
    select * from run_rows
),

known as (
    select
        matches.matched_key,
        rows_.source_file,
        rows_.source_row,
        rows_.source_id,
        rows_.poi_name,
        rows_.street,
        rows_.city,
        rows_.phone
    from matches
    inner join rows_
        on rows_.run_id = matches.matched_run_id
        and coalesce(rows_.own_key, rows_.place_key) = matches.matched_key
    qualify row_number() over (partition by matches.matched_key order by rows_.row_ord) = 1
),

final as (
    select
        merged.source_file,
        merged.source_row,
        merged.source_id,
        matches.own_key,
        merged.poi_name,
        merged.street,
        merged.city,
        merged.phone,
        coalesce(this_run.source_file, known.source_file) as matched_file,
        coalesce(this_run.source_row, known.source_row) as matched_source_row,
        coalesce(this_run.source_id, known.source_id) as matched_id,
        matches.matched_key,
        matches.matched_run_id,
        coalesce(this_run.poi_name, known.poi_name) as matched_name,
        coalesce(this_run.street, known.street) as matched_street,
        coalesce(this_run.city, known.city) as matched_city,
        coalesce(this_run.phone, known.phone) as matched_phone,
        matches.match_probability,
        matches.evidence::varchar as evidence,
        matches.row_ord
    from matches
    inner join rows_ as merged
        on merged.run_id = matches.run_id and merged.row_ord = matches.row_ord
    left join rows_ as this_run
        on this_run.run_id = matches.run_id and this_run.row_ord = matches.matched_row
    left join known on known.matched_key = matches.matched_key and matches.matched_row is null
)

select * exclude (row_ord) from final order by row_ord
