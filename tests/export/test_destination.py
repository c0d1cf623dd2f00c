"""Destination URLs: what each names, and a password in one refused by the library and by the
flows' parameter schema alike (the same rule, two forms)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from placeflow.errors import EXIT_USAGE, PasswordInUrl, exit_code
from placeflow.exporters.destination import (
    SAFE_DESTINATION_PATTERN,
    parse_destination,
    refuse_password,
)

WITH_PASSWORD = [
    "postgresql://etl:s3cret@db:5432/analytics",
    "postgres://etl:@db/analytics",
    "postgresql://etl@db/analytics?sslmode=require&password=s3cret",
    "postgresql://db/analytics?password=s3cret",
    "delta://u:p@localhost/srv/lake",
    # libpq reads the user info to the last "@": a password holding / ? # @ is still one
    "postgresql://etl:s3cret/x@db:5432/analytics",
    "postgresql://etl:s3cret?x@db/analytics",
    "postgresql://etl:s3cret#x@db/analytics",
    "postgresql://etl:x/s3cret#?@db/analytics",
    "postgresql://etl:s3c@ret@db/analytics",
    "postgresql://db/analytics?Password=s3cret",
    "postgresql://db/analytics?sslmode=require#password=s3cret",
]
WITHOUT = [
    "postgresql://etl@db:5432/analytics",
    "postgresql://db/analytics?sslmode=require",
    "file:///srv/lake",
    "delta:///srv/lake",
    "/srv/lake",
    "lake",
    "C:/lake",
    "delta:///srv/a:b@c",
    "postgresql://etl@db:5432/analytics?application_name=etl",
]


@pytest.mark.parametrize("dest", WITH_PASSWORD)
def test_a_password_in_the_url_is_refused_by_both_forms(dest: str) -> None:
    """parse_destination raises PasswordInUrl (exit code 2) without the password in its
    message; the schema pattern refuses the same string."""
    with pytest.raises(PasswordInUrl) as refused:
        parse_destination(dest)
    assert exit_code(refused.value) == EXIT_USAGE
    assert "s3cret" not in str(refused.value) and "PGPASSWORD" in str(refused.value)
    assert re.search(SAFE_DESTINATION_PATTERN, dest) is None


@pytest.mark.parametrize("dest", WITHOUT)
def test_destinations_without_a_password_pass_both_forms(dest: str) -> None:
    """Paths and URLs without a password pass the library's rule and the schema pattern."""
    refuse_password(dest)
    assert re.search(SAFE_DESTINATION_PATTERN, dest) is not None


def test_each_scheme_names_its_kind(tmp_path: Path) -> None:
    """A directory and file:// are Parquet, delta:// a Delta folder, postgresql:// a database;
    the redacted form is what the warehouse records."""
    assert parse_destination(str(tmp_path)).kind == "parquet"
    assert parse_destination(tmp_path.as_uri()).redacted == tmp_path.as_uri()
    delta = parse_destination(f"delta://{tmp_path}")
    assert (delta.kind, delta.path, delta.redacted) == ("delta", tmp_path, f"delta://{tmp_path}")
    pg = parse_destination("postgres://etl@db:5432/analytics")
    assert (pg.kind, pg.redacted) == ("postgresql", "postgresql://etl@db:5432/analytics")


def test_a_password_percent_encoded_in_a_parameter_name_is_refused() -> None:
    """libpq decodes a parameter's name: pass%77ord= is a password too (the library's rule)."""
    with pytest.raises(PasswordInUrl) as refused:
        parse_destination("postgresql://db/analytics?pass%77ord=s3cret&sslmode=require")
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("dest", "shown"),
    [
        ("postgresql://etl:s3cret/x@db:5432/analytics", "postgresql://etl@db:5432/analytics"),
        (
            "postgresql://etl:a#s3cret?@db/analytics?sslmode=require",
            "postgresql://etl@db/analytics?sslmode=require",
        ),
        (
            "postgresql://db/a?sslmode=require&password=s3cret&x=1",
            "postgresql://db/a?sslmode=require",
        ),
        ("postgresql://etl@db/a?password=s3cret#frag", "postgresql://etl@db/a"),
    ],
)
def test_the_refusal_shows_the_url_without_the_password(dest: str, shown: str) -> None:
    """The message quotes the URL with its user name, host and path, and nothing of the password."""
    with pytest.raises(PasswordInUrl) as refused:
        refuse_password(dest)
    assert str(refused.value).startswith(f"{shown}: ")
    assert "s3cret" not in str(refused.value)
