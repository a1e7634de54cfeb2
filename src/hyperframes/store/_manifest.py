"""The manifest (``manifest.json``) as one typed, versioned model: :class:`Manifest`.

The build writes a store's manifest through it (``Manifest(...).to_json()``) and every reader
checks the JSON it finds through it (:func:`check_manifest`): the format name, a version this
hyperframes reads (``format.READABLE_VERSIONS``; another is refused naming the file and the
versions read), every known key with its JSON type, then what the types do not say (the
checksum algorithm, the stored dtype, a known codec). A wrong key is a :class:`StoreError`
naming the file and the key, never a ``KeyError`` or pydantic's own text.

The JSON on disk is the format's own (``format.py`` describes each key; ``docs/store-format.md``
lists them): the model adds nothing and drops nothing. Keys it does not know are kept as they
are (``extra="allow"``): the format grows by optional keys a reader that does not know them
ignores, within one version. A key absent from a file stays absent when it is written back
(:meth:`Manifest.to_json` leaves out what was never set), so a manifest read and written again
is the same JSON.

This module imports pydantic, so it loads on first use (``store.Manifest``, and
``_open.check_manifest`` at the first open): ``import hyperframes.store`` stays without it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from .._core._errors import StoreError
from ._codecs import codec_dtypes, list_codecs
from ._folder import load_manifest
from ._table_checks import ALTERED
from .format import ALLOWED_DTYPES, CHECKSUM_ALGORITHM, FORMAT_NAME, READABLE_VERSIONS

__all__ = [
    "CodecEntry",
    "FileEntry",
    "Manifest",
    "Normalization",
    "check_manifest",
]

_STRICT = ConfigDict(strict=True, extra="allow")


class FileEntry(BaseModel):
    """A file of the store (``shards``: a shard's name in ``shards/``; ``index``:
    ``index/NAME``), its size and its ``checksum_algorithm`` checksum (32 hex digits; absent
    in a manifest written by another tool, which ``hyperframes verify --resign`` records)."""

    model_config = _STRICT
    name: str
    bytes: int = Field(ge=0)
    checksum: str | None = None


class CodecEntry(BaseModel):
    """The codec of the shards and its parameters (``Codec.params``: ``_codecs`` says which)."""

    model_config = _STRICT
    name: str
    quality: int | None = None  # jpeg
    subsampling: str | None = None  # jpeg
    library: str | None = None  # jpeg
    chunk_frames: int | None = None  # lz4, zstd
    level: int | None = None  # zstd
    layout: str | None = None  # yuv420


class Normalization(BaseModel):
    """Per-channel mean and std of a float16 store (frames stored as ``(x / 255 - mean) / std``)."""

    model_config = _STRICT
    mean: list[float]
    std: list[float]


class Manifest(BaseModel):
    """A store's ``manifest.json``, key by key (``format.py`` and docs/store-format.md).

    Required (what a reader relies on): ``format``, ``format_version``, ``codec``, ``dtype``,
    ``shards``, ``index``, ``num_frames``; every other key is optional (older stores, stores
    converted to HDF5, manifests written by other tools lack some)."""

    model_config = _STRICT
    format: Literal["hyperframes-store"]
    format_version: int
    hyperframes_version: str | None = None
    git_commit: str | None = None
    created: str | None = None
    #: the build's options (``BuildOptions.content()``) and its number of workers
    build: dict[str, Any] | None = None
    #: the decoder: name, version, resize_algorithm, color_conversion, rotation
    decoder: dict[str, Any] | None = None
    codec: CodecEntry
    dtype: str
    layout: str | None = None
    normalize: Normalization | None = None
    checksum_algorithm: str | None = None
    shards: list[FileEntry]
    index: list[FileEntry]
    num_videos: int | None = None
    num_frames: int
    store_bytes: int | None = None
    source_bytes: int | None = None
    classes: list[str] | None = None
    #: inputs not stored: the first 1,000 failed (``{"path", "error"}``), all counted
    failed: list[dict[str, Any]] | None = None
    failed_count: int | None = None
    damaged: list[dict[str, Any]] | None = None
    gaps: list[dict[str, Any]] | None = None
    skipped: list[dict[str, Any]] | None = None
    notes: list[dict[str, Any]] | None = None
    box_classes: list[str] | None = None
    boxes_file: str | None = None
    #: the other columns of an annotation's rows, by source path
    fields: dict[str, dict[str, Any]] | None = None
    #: an HDF5 store: its datasets' layout, and its file's size
    hdf5: dict[str, Any] | None = None
    file_bytes: int | None = None
    converted_from: dict[str, Any] | None = None
    #: a store at a URL: the generation its shards and index lie under, and the fingerprint
    #: of the inputs and options it was built from (a rerun of the same build keeps it)
    generation: str | None = None
    built_from: str | None = None

    @classmethod
    def read(cls, path: str | os.PathLike) -> Manifest:
        """The manifest file ``path`` of a store folder, checked (:func:`check_manifest`)."""
        return check_manifest(load_manifest(Path(path)), path)

    def to_json(self) -> dict:
        """The manifest as JSON values, without the keys that were never set."""
        return self.model_dump(mode="json", exclude_unset=True)


#: the keys a manifest must have
REQUIRED = tuple(name for name, f in Manifest.model_fields.items() if f.is_required())


#: what a key holds, in JSON's words, by pydantic's error type
_JSON_KINDS = {
    "dict_type": "an object",
    "model_type": "an object",
    "list_type": "a list",
    "int_type": "an integer",
    "string_type": "a string",
    "float_type": "a number",
    "bool_type": "true or false",
    "greater_than_equal": "a number >= 0",
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _problem(e: pydantic.ValidationError, m: dict, path) -> str:
    """The first thing wrong in ``m``, as a reader says it (file, key, value, what is allowed)."""
    err = e.errors()[0]
    loc = err["loc"]
    key = loc[0]
    if err["type"] == "missing" and len(loc) == 1:
        return f"{path}: lacks {key!r}; a store manifest has {', '.join(REQUIRED)}: {ALTERED}"
    if key in ("shards", "index") and len(loc) > 1 and isinstance(m.get(key), list):
        row = m[key][loc[1]] if isinstance(loc[1], int) else m[key]
        return (
            f"{path}: the {key!r} entry {_short(row)} does not name a file and its size in "
            f"bytes: {ALTERED}"
        )
    where = ".".join(str(p) for p in loc)
    value = err.get("input")
    if err["type"] == "missing":
        return f"{path}: {where!r} is missing: {ALTERED}"
    expected = _JSON_KINDS.get(err["type"], err["msg"].removeprefix("Input should be "))
    return f"{path}: {where!r} is {_short(value)}, expected {expected}: {ALTERED}"


def check_manifest(m, path: str | os.PathLike) -> Manifest:
    """The manifest ``m`` (parsed JSON) of the file ``path``, checked through :class:`Manifest`:
    format, a readable version, every key's type, the checksum algorithm, the stored dtype
    (``ALLOWED_DTYPES``) and a known codec. StoreError naming ``path`` and the key."""
    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise StoreError(f"{path}: not a hyperframes store manifest")
    version = m.get("format_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise StoreError(
            f"{path}: store format version {version} is not readable by this hyperframes, "
            f"which reads versions {', '.join(map(str, READABLE_VERSIONS))}"
        )
    try:
        model = Manifest.model_validate(m)
    except pydantic.ValidationError as e:
        raise StoreError(_problem(e, m, path)) from None
    algorithm = m.get("checksum_algorithm", CHECKSUM_ALGORITHM)
    if algorithm != CHECKSUM_ALGORITHM:
        raise StoreError(
            f"{path}: checksum_algorithm {algorithm!r} is unknown; this hyperframes reads "
            f"stores whose checksums are {CHECKSUM_ALGORITHM}: {ALTERED}"
        )
    if model.dtype not in ALLOWED_DTYPES:
        raise StoreError(
            f"{path}: dtype {model.dtype!r} is not a stored element type; a store holds "
            f"{' or '.join(ALLOWED_DTYPES)}: {ALTERED}"
        )
    if model.codec.name not in list_codecs():
        raise StoreError(
            f"{path}: codec {model.codec.name!r} is unknown; this hyperframes reads "
            f"{', '.join(list_codecs())}"
        )
    held = codec_dtypes(model.codec.name)
    if model.dtype not in held:
        raise StoreError(
            f"{path}: codec {model.codec.name!r} stores {' or '.join(held)} frames, not "
            f"{model.dtype}: {ALTERED}"
        )
    return model
