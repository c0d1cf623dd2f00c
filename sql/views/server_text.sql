-- server_text(s): a string a server sent, as it is stored: cut to 2,000 characters
-- (placeflow.support.text.MAX_SERVER_TEXT) and marked with how many were dropped, exactly as
-- placeflow.support.text.cap_text does for the answers parsed in Python. A service (or a proxy) can
-- send a string of any size; a result file read by DuckDB itself (sql/load/lines_*.sql) is
-- capped here (tests/warehouse/test_server_text.py holds the two to one rule).

-- strlen (bytes) first: a string of at most 2,000 bytes has at most 2,000 characters, and
-- counting bytes spares decoding UTF-8 for nearly every string a server sends.
create or replace macro server_text(s) as
    case
        when strlen(s) <= 2000 or length(s) <= 2000 then s
        else left(s, 2000) || '… [truncated ' || format('{:,}', length(s) - 2000) || ' characters]'
    end;
