"""The optional C extension (everything else is in pyproject.toml): partial JPEG decoding for
the jpeg store's box reads, against the system's libjpeg-turbo. ``optional=True``: without a
compiler or libjpeg's headers the build goes on without it, and the reads decode whole frames
(hyperframes.store._jpeg_crop says so once)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hyperframes.store._jpegcrop",
            sources=["src/hyperframes/store/_jpegcrop.c"],
            libraries=["jpeg"],
            optional=True,
        )
    ]
)
