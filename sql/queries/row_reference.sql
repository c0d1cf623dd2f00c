-- row_reference: the row a user's reference names, newest run first: by `file_row` (the
-- input file as the run read it, or only its name, and the data row number), by `id` (the
-- file's id column) or by `key` (a row's own key, or the place it became). Each answer is the
-- row's own key (the place of its own fields; the place it became for runs before own keys
-- were kept), its run and where it was read. Parameters: $by, $file, $row, $value, $run_id
-- (null: any run).

with

candidates as (
    select
        run_rows.run_id,
        runs.created_at,
        run_rows.row_ord,
        coalesce(run_rows.own_key, run_rows.place_key) as own_key,
        run_rows.place_key,
        run_rows.source_file,
        run_rows.source_row,
        run_rows.source_id
    from run_rows
    inner join runs on run_rows.run_id = runs.run_id
    where run_rows.place_key is not null
        and (cast($run_id as varchar) is null or run_rows.run_id = $run_id)
),

named as (
    select *
    from candidates
    where case $by
        when 'file_row' then source_row = $row
            and (
                source_file = $file
                or regexp_extract(source_file, '[^/\\]+$') = regexp_extract($file, '[^/\\]+$')
            )
        when 'id' then source_id = $value
        else own_key = $value or place_key = $value
    end
)

select
    own_key,
    run_id,
    source_file,
    source_row,
    source_id
from named
order by created_at desc, run_id desc, (own_key = $value) desc, row_ord
