"""The optional C extensions (everything else is in pyproject.toml): partial JPEG decoding for
the jpeg store's box reads, against the system's libjpeg-turbo; and the uint8 affine warp and
hue shift of the batch transforms (no dependency). ``optional=True``: without a compiler or
libjpeg's headers the build goes on without them, the reads decode whole frames
(hyperframes.store._jpeg_crop says so once) and the transforms use OpenCV's slower passes."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hyperframes.store._jpegcrop",
            sources=["src/hyperframes/store/_jpegcrop.c"],
            libraries=["jpeg"],
            optional=True,
        ),
        Extension(
            "hyperframes._core._pixels",
            sources=["src/hyperframes/_core/_pixels.c"],
            extra_compile_args=["-O3", "-fno-trapping-math"],
            optional=True,
        ),
    ]
)
