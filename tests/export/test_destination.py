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
]
WITHOUT = [
    "postgresql://etl@db:5432/analytics",
    "postgresql://db/analytics?sslmode=require",
    "file:///srv/lake",
    "delta:///srv/lake",
    "/srv/lake",
    "lake",
    "C:/lake",
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
