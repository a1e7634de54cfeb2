"""Whether a store path names object storage (``s3://bucket/prefix``) or a local path: the
store opens and writes URLs (``hyperframes.remote``), and configs leave them as given."""

from __future__ import annotations

#: URL schemes read as object storage (``file://`` and plain paths stay local)
SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")


def is_url(path) -> bool:
    """Whether ``path`` names a store in object storage (``s3://...``) rather than a local path."""
    if not isinstance(path, str):
        return False
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES
