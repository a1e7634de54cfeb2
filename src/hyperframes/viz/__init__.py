"""Pictures of what models compute, and a page to look at a store."""

from ._pca import pca_image
from ._report import write_report

__all__ = ["pca_image", "write_report"]
