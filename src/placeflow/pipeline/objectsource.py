"""Inputs in object storage (``s3://BUCKET/KEY``, globs in the key too): `ObjectSource`.

Each object is copied once to a local folder of the source's own (streamed, never whole in
memory), then read exactly as a local file is (`placeflow.pipeline.read`), named by its URL in
the read's summary and in every row's `source_file`. A run is told apart from another by each
object's URL, size and modification time, as a local file is by its path, size and time. Local
paths may stand beside URLs; the copies are removed when the source is.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import polars as pl

from placeflow.options import RunOptions
from placeflow.pipeline.read import read_inputs, stream_inputs
from placeflow.pipeline.readstream import ReadInfo, ReadStream
from placeflow.pipeline.source import FileSource
from placeflow.support.objects import ObjectInfo, Storage, download, is_object_url, list_objects

__all__ = ["ObjectSource", "has_objects"]


def has_objects(inputs: tuple[str, ...] | list[str]) -> bool:
    """Whether any input is an object-storage URL."""
    return any(is_object_url(i) for i in inputs)


class ObjectSource:
    """Files in object storage (and local ones beside them), read in the order given."""

    def __init__(self, inputs: tuple[str, ...], storage: Storage) -> None:
        self.inputs = inputs
        self.storage = storage
        self._lock = threading.Lock()
        self._listed: list[list[ObjectInfo]] | None = None
        self._local: tuple[list[str], dict[str, str]] | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="placeflow-inputs-"))
        weakref.finalize(self, shutil.rmtree, self._folder, True)

    @property
    def keys_given(self) -> bool:
        """An object's places are keyed from their fields."""
        return False

    def listed(self) -> list[list[ObjectInfo]]:
        """Each URL input's objects (empty for a local input), listed once."""
        with self._lock:
            if self._listed is None:
                self._listed = [
                    list_objects(i, self.storage) if is_object_url(i) else [] for i in self.inputs
                ]
            return self._listed

    def identity(self) -> list[str]:
        """Each object's URL, size and modification time; each local file's as `FileSource`."""
        parts: list[str] = []
        for given, objects in zip(self.inputs, self.listed(), strict=True):
            if is_object_url(given):
                parts.extend(f"{o.url}|{o.size}|{o.mtime_ns}" for o in objects)
            else:
                parts.extend(FileSource((given,)).identity())
        return parts

    def local(self) -> tuple[list[str], dict[str, str]]:
        """The inputs as local paths (objects copied here once, each under a folder of its
        own so that two objects of one name stay apart) and each copy's URL."""
        listed = self.listed()
        with self._lock:
            if self._local is None:
                paths: list[str] = []
                labels: dict[str, str] = {}
                for given, objects in zip(self.inputs, listed, strict=True):
                    if not is_object_url(given):
                        paths.append(given)
                        continue
                    for obj in objects:
                        place = self._folder / f"{len(labels):05d}"
                        place.mkdir()
                        copy = place / obj.url.rstrip("/").rpartition("/")[2]
                        download(obj.url, self.storage, str(copy))
                        paths.append(str(copy))
                        labels[str(copy)] = obj.url
                self._local = (paths, labels)
            return self._local

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
        paths, labels = self.local()
        return read_inputs(
            paths,
            mapping=dict(options.mapping) or None,
            encoding=options.encoding,
            separator=options.separator,
            constants=dict(options.constants),
            labels=labels,
        )

    def batches(self, options: RunOptions, batch_rows: int) -> ReadStream:
        paths, labels = self.local()
        return stream_inputs(
            paths,
            mapping=dict(options.mapping) or None,
            encoding=options.encoding,
            separator=options.separator,
            batch_rows=batch_rows,
            constants=dict(options.constants),
            labels=labels,
            address_optional=options.without_address,
        )
