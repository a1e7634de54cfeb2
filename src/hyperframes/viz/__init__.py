"""Pictures of what models compute."""

from ._pca import pca_image

__all__ = ["pca_image"]
