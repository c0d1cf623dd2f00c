-- Reading attribute values of any shape a service sends (docs/spec-readings.md, 19).
--
-- json_string(value): the text of a value sent as a plain JSON string, else null (phone,
-- website and email are read from it when they are not the spec's objects).
--
-- social_url(value), social_handle(value): the profile URL and the handle of a facebook,
-- instagram or tiktok value. The spec shows facebook's shape, {url, handle}, and not
-- instagram's or tiktok's: an object gives its url and handle (`username` standing for a
-- missing handle); a plain string is the URL when it starts with http:// or https://, else the
-- handle (a leading @ dropped). The value itself is always kept beside them (*_value).

create or replace macro json_string(value) as
    case when json_type(value) = 'VARCHAR' then value ->> '$' end;

create or replace macro social_url(value) as
    coalesce(
        value ->> 'url',
        case
            when regexp_matches(json_string(value), '^https?://') then json_string(value)
        end
    );

create or replace macro social_handle(value) as
    coalesce(
        value ->> 'handle',
        value ->> 'username',
        case
            when not regexp_matches(json_string(value), '^https?://')
                then ltrim(json_string(value), '@')
        end
    );
