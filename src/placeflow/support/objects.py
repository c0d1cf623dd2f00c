"""Object storage: inputs read from, and exports written to, ``s3://`` (and ``gs://``, ``az://``).

Every access goes through pyarrow's file systems (`pyarrow.fs`), and Delta tables through
delta-rs's own storage options (`Storage.delta_options`): no client is written here. S3 is
configured by the standard AWS variables, read by `placeflow.config.storage_settings` and passed
down as a `Storage`: AWS_ENDPOINT_URL (an S3-compatible server: MinIO, moto, a cloud's own),
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION and AWS_ALLOW_HTTP
(``true`` for an endpoint on plain http). Unset, each is left to the library's own defaults.
``gs://`` is served by the same library with its own default credentials (GcsFileSystem);
``az://`` is refused with a message (pyarrow's AzureFileSystem needs an account this
configuration does not carry).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from placeflow.errors import InputError, OptionsError
from placeflow.support.redact import Secret

if TYPE_CHECKING:
    import pyarrow.fs as pafs  # type: ignore[import-untyped]  # pyarrow ships no stubs

SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs", "az": "az", "abfs": "az"}
"""URL schemes of object storage, and the store each names."""
GLOB = frozenset("*?[")


@dataclass(frozen=True)
class ObjectInfo:
    """One object found: its URL, size and modification time (as the store says it)."""

    url: str
    size: int
    mtime_ns: int | None


@dataclass(frozen=True)
class Storage:
    """How to reach object storage (`placeflow.config.storage_settings` reads it)."""

    endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: Secret | None = None
    session_token: Secret | None = None
    region: str | None = None
    allow_http: bool = False

    def filesystem(self, store: str) -> pafs.FileSystem:
        """A pyarrow file system of `store` (``s3``, ``gs`` or ``az``)."""
        import pyarrow.fs as pafs

        if store == "gs":
            return pafs.GcsFileSystem()
        if store == "az":
            raise OptionsError(
                "az:// is not served: placeflow reads and writes s3:// (and gs://); copy the"
                " files to an S3-compatible bucket"
            )
        endpoint, scheme = self.endpoint_url, "https"
        if endpoint:
            parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            scheme = parts.scheme or "https"
            endpoint = parts.netloc + parts.path.rstrip("/")
            if scheme == "http" and not self.allow_http:
                raise OptionsError(
                    f"AWS_ENDPOINT_URL {self.endpoint_url} is plain http: set AWS_ALLOW_HTTP=true"
                    " to use it (credentials travel unencrypted)"
                )
        return pafs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=None if self.secret_access_key is None else self.secret_access_key.reveal(),
            session_token=None if self.session_token is None else self.session_token.reveal(),
            region=self.region,
            endpoint_override=endpoint or None,
            scheme=scheme,
        )

    def delta_options(self) -> dict[str, str]:
        """delta-rs's storage options for an ``s3://`` table: the same settings, and
        ``conditional_put: etag`` so two writers' commits cannot overwrite each other (no
        rename, no lock table)."""
        options = {"conditional_put": "etag"}
        given = {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key and self.secret_access_key.reveal(),
            "AWS_SESSION_TOKEN": self.session_token and self.session_token.reveal(),
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": "true" if self.allow_http else None,
        }
        options.update({k: v for k, v in given.items() if v})
        return options


def is_object_url(name: str) -> bool:
    """Whether `name` is an object-storage URL (``s3://bucket/key``), not a local path."""
    return urlsplit(name).scheme.lower() in SCHEMES


def split_url(url: str) -> tuple[str, str]:
    """(store, path as pyarrow names it: ``bucket/key``) of an object-storage URL."""
    parts = urlsplit(url)
    store = SCHEMES.get(parts.scheme.lower())
    if store is None or not parts.netloc:
        raise OptionsError(f"{url} is not an object-storage URL (s3://BUCKET/KEY)")
    return store, f"{parts.netloc}{parts.path}".rstrip("/")


def open_url(url: str, storage: Storage) -> tuple[pafs.FileSystem, str]:
    """The file system holding `url` and the path of `url` in it."""
    store, path = split_url(url)
    return storage.filesystem(store), path


def list_objects(pattern: str, storage: Storage) -> list[ObjectInfo]:
    """The objects `pattern` names (a URL, or a URL with ``*``/``?``/``[`` in its key), sorted;
    `InputError` when none is there."""
    import pyarrow.fs as pafs

    fs, path = open_url(pattern, storage)
    prefix = f"{urlsplit(pattern).scheme}://"
    try:
        if not GLOB & set(path):
            info = fs.get_file_info(path)
            found = [info] if info.type == pafs.FileType.File else []
        else:
            fixed = path[: min(path.index(c) for c in GLOB if c in path)].rpartition("/")[0]
            selector = pafs.FileSelector(fixed, recursive=True, allow_not_found=True)
            found = [
                i for i in fs.get_file_info(selector)
                if i.type == pafs.FileType.File and fnmatch.fnmatchcase(i.path, path)
            ]  # fmt: skip
    except OSError as exc:
        raise InputError(f"{pattern}: cannot be listed ({exc})") from None
    if not found:
        raise InputError(f"{pattern}: no such object (nothing matches); check the URL")
    return [
        ObjectInfo(prefix + i.path, int(i.size or 0), i.mtime_ns)
        for i in sorted(found, key=lambda i: i.path)
    ]


def download(url: str, storage: Storage, local: str) -> None:
    """Copy the object `url` to the local file `local` (streamed, never whole in memory)."""
    import pyarrow.fs as pafs

    fs, path = open_url(url, storage)
    try:
        pafs.copy_files(
            path, local, source_filesystem=fs, destination_filesystem=pafs.LocalFileSystem()
        )
    except OSError as exc:
        raise InputError(f"{url}: cannot be read ({exc})") from None
