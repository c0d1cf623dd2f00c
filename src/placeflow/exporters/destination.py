"""Where an export goes: a directory or ``file://`` URL (Parquet), ``delta://`` (Delta tables),
``s3://BUCKET/PREFIX`` (Parquet in object storage), ``delta+s3://BUCKET/PREFIX`` (Delta tables
there) or ``postgresql://`` (a database), parsed once into a `Destination`.

A destination URL never carries a password: a URL is printed, logged, recorded and, given to a
flow as `export_to`, stored by Prefect in its database and shown in its UI. One with a password
(``user:secret@`` whatever the password holds, as libpq reads a URI, or ``password=`` in its
query) is refused (`PasswordInUrl`, exit code 2)
before anything is exported, saying where the password goes instead: PGPASSWORD (for a
deployment, the worker's environment) or a Prefect Secret block named by the flow's
`pg_password_block`. `SAFE_DESTINATION_PATTERN` is the same rule as a JSON-schema pattern, which the
flows put on `export_to` so that a Prefect server refuses to create such a flow run at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote as url_quote
from urllib.parse import unquote, urlsplit

from placeflow.errors import OptionsError, PasswordInUrl
from placeflow.support.objects import Storage, open_url, split_url
from placeflow.support.redact import Secret, url_has_password, url_without_password

if TYPE_CHECKING:
    from placeflow.exporters.delta import Lake
    from placeflow.exporters.parquet import ParquetFiles

Kind = Literal["parquet", "postgresql", "delta"]
OBJECT_STORES = ("s3", "gs")
"""Object storage an export writes to (`placeflow.support.objects`)."""

SAFE_DESTINATION_PATTERN = (
    r"^(?![A-Za-z][A-Za-z0-9+.-]+://(?!/)[\s\S]*:[\s\S]*@)"
    r"(?![\s\S]*[?&#]\s*[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]\s*=)"
)
"""A destination string without a password (the rule `parse_destination` applies, read as libpq
reads a URI: a colon anywhere before the last "@" of the authority, or a ``password=``
parameter), as a regular expression for a JSON schema's `pattern` (matched with search, so
anchored at the start). It does not decode a percent-encoded parameter name; the library's own
check, which every flow runs before anything else, does."""

HOW = (
    "give the URL without it and the password in PGPASSWORD (for a Prefect deployment: in the"
    " worker's environment), or name a Prefect Secret block holding it in the flow parameter"
    " pg_password_block (docs/operations.md, 'Export credentials')"
)
"""Where an export's password goes, said with every refusal."""


@dataclass(frozen=True)
class Destination:
    kind: Kind
    redacted: str
    """The destination as recorded and printed: never a password."""
    path: Path | None = None
    url: str | None = None
    """The root in object storage (``s3://bucket/prefix``), for Parquet or Delta there."""
    password: Secret | None = field(default=None, repr=False)
    _url: str = field(default="", repr=False)

    def connection_uri(self) -> str:
        """The libpq URI with the password: only ever handed to the driver."""
        if self.password is None:
            return self._url
        parts = urlsplit(self._url)
        user, _, host = parts.netloc.rpartition("@")
        auth = f"{user}:{url_quote(self.password.reveal(), safe='')}@"
        return parts._replace(netloc=auth + host).geturl()


def without_password(dest: str) -> str:
    """`dest` with any password taken out (for the refusal's message, and what a flow run's
    stored parameters are rewritten to): `url_without_password`."""
    return url_without_password(dest)


def refuse_password(dest: str) -> None:
    """Raise `PasswordInUrl` when `dest` may carry a password, read as libpq reads a URI
    (`url_has_password`: user info with a colon, whatever the password holds, or a
    ``password=`` parameter). The message never quotes the URL as given."""
    if url_has_password(dest):
        raise PasswordInUrl(
            f"{without_password(dest)}: a password in the destination URL is refused (a URL is"
            " printed, logged and, as a flow parameter, stored in Prefect's database and shown"
            f" in its UI); nothing was exported: {HOW}"
        )


def parse_destination(dest: str, password: Secret | None = None) -> Destination:
    """A directory, ``file://``, ``delta://``, ``s3://``, ``delta+s3://`` or ``postgresql://``
    URL; `password` (PGPASSWORD from config, or a Secret block's value) is PostgreSQL's. A
    password in the URL is refused."""
    refuse_password(dest)
    parts = urlsplit(dest)
    scheme = parts.scheme.lower()
    inner = scheme.removeprefix("delta+")
    if inner in OBJECT_STORES:
        if not parts.netloc:
            raise OptionsError(f"{scheme}:// needs a bucket: {scheme}://BUCKET/PREFIX")
        if parts.query or parts.fragment:
            raise OptionsError(f"{scheme}:// takes no query: its settings are AWS_* variables")
        url = f"{inner}://{parts.netloc}{parts.path}".rstrip("/")
        if scheme.startswith("delta+"):
            return Destination("delta", f"delta+{url}", url=url)
        return Destination("parquet", url, url=url)
    if parts.scheme in ("postgresql", "postgres"):
        if not parts.hostname and "host=" not in parts.query:
            raise OptionsError("a postgresql:// destination needs a host")
        url = without_password(parts._replace(scheme="postgresql").geturl())
        return Destination("postgresql", url, password=password, _url=url)
    if parts.scheme in ("file", "delta"):
        if parts.netloc not in ("", "localhost"):
            raise OptionsError(
                f"{parts.scheme}:// destinations are local paths, not on {parts.netloc}"
            )
        if not parts.path:
            raise OptionsError(f"{parts.scheme}:// needs a path: {parts.scheme}:///srv/lake")
        path = Path(unquote(parts.path))
    elif parts.scheme and len(parts.scheme) > 1:
        raise OptionsError(
            f"unsupported destination {parts.scheme}://: use a directory, file://, delta://,"
            " s3://, delta+s3:// or postgresql://"
        )
    else:
        path = Path(dest)
    path = path.expanduser().resolve()
    if parts.scheme == "delta":
        return Destination("delta", "delta://" + path.as_posix(), path=path)
    return Destination("parquet", path.as_uri(), path=path)


def parquet_files(destination: Destination, storage: Storage) -> ParquetFiles:
    """Where a Parquet export's files go: a folder here, or a prefix in object storage."""
    from placeflow.exporters.bucket import Bucket
    from placeflow.exporters.parquet import LocalFiles

    if destination.url is None:
        assert destination.path is not None
        return LocalFiles(destination.path)
    fs, root = open_url(destination.url, storage)
    return Bucket(fs, root, destination.url)


def lake_of(destination: Destination, storage: Storage) -> Lake:
    """Where a Delta export's tables go: a folder here, or a prefix in object storage with
    delta-rs's storage options (S3's from the AWS variables; gs:// its own defaults)."""
    from placeflow.exporters.delta import Lake

    if destination.url is None:
        assert destination.path is not None
        return Lake(str(destination.path))
    store, _ = split_url(destination.url)  # a bucket named
    return Lake(destination.url, storage.delta_options() if store == "s3" else {})
