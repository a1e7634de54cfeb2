"""The torchcodec backend: FFmpeg (the system's shared libraries) through torchcodec.

Streams with torchcodec's ``get_next_frame`` (one frame at a time, no index scan).
Rotation: torchcodec applies the display matrix itself, so its frames are already upright.
Timestamps: torchcodec gives FFmpeg's best-effort timestamps itself.

Damage: a frame that fails with FFmpeg's "Invalid data found" is skipped, as FFmpeg's command
line skips the packet (and PyAV does); with a ``DecodeReport`` these are counted as
``failed_packets``. That is all torchcodec exposes: it conceals damage without saying so and
sends FFmpeg's log to the terminal, not to Python.
"""

from __future__ import annotations

from collections.abc import Iterator

from .._core._errors import DecodeError, install_command
from ._base import DecodeReport, Timeline, VideoInfo, register_decoder
from ._library import LibraryDecoder, decode_errors
from ._pyav import Inspection
from ._resize import ArrayFrame

_INVALID_DATA = "Invalid data found"  # FFmpeg's AVERROR_INVALIDDATA: damaged input
_MAX_FAILED_IN_A_ROW = 1000  # then the decoder is stuck, not skipping damage


@register_decoder(
    "torchcodec",
    install_hint=install_command("torchcodec") + ", and the system's FFmpeg libraries "
    "(apt-get install ffmpeg)",
)
class TorchCodecDecoder(LibraryDecoder):
    """torchcodec's CPU decoder; needs FFmpeg shared libraries and a matching torch."""

    name = "torchcodec"

    def __init__(self):
        try:
            import torchcodec  # deferred: optional/heavy dependency
            from torchcodec import _core  # deferred: optional/heavy dependency
            from torchcodec.decoders import VideoDecoder  # deferred: optional/heavy dependency

            # the import is lazy about the native library: ask for FFmpeg's versions so that
            # missing FFmpeg libraries show here, not at the first frame
            _core.get_ffmpeg_library_versions()
        except (OSError, RuntimeError) as e:  # installed, but its FFmpeg / torch libraries fail
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            first = first.split(" Likely causes")[0].rstrip(":. ")
            raise ImportError(f"torchcodec cannot load: {first}") from e
        self._torchcodec, self._core, self._VideoDecoder = torchcodec, _core, VideoDecoder

    def version(self) -> str:
        try:
            ffmpeg = self._core.get_ffmpeg_library_versions()["ffmpeg_version"]
        except Exception:
            return f"torchcodec {self._torchcodec.__version__}"
        return f"torchcodec {self._torchcodec.__version__} (FFmpeg {ffmpeg})"

    def _open(self, found: Inspection):
        path = found.info.path
        try:
            return self._VideoDecoder(
                path,
                stream_index=found.chosen.absolute_index,
                dimension_order="NHWC",
                seek_mode="approximate",  # no scan: we stream, we never seek
                num_ffmpeg_threads=0,
            )
        except Exception as e:
            raise DecodeError(
                f"{path}: torchcodec cannot open {found.chosen.describe()}: {e}"
            ) from e

    def _decode(
        self, decoder, info: VideoInfo, report: DecodeReport | None
    ) -> Iterator[ArrayFrame]:
        timeline = Timeline(info.fps, start=info.start_seconds)
        get_next_frame = self._core.get_next_frame
        failed = 0  # in a row
        with decode_errors(info, "torchcodec", timeline, " (truncated or corrupt?)"):
            while True:
                try:
                    data, pts, duration = get_next_frame(decoder._decoder)
                except IndexError:  # torchcodec's end of stream
                    break
                except RuntimeError as e:
                    failed += 1
                    if _INVALID_DATA not in str(e) or failed > _MAX_FAILED_IN_A_ROW:
                        raise
                    if report is not None:
                        report.add("failed_packets", message=f"torchcodec: {_reason(e)}")
                    continue
                failed = 0
                for rgb, index, t in timeline.push(data.numpy(), float(pts), float(duration)):
                    yield ArrayFrame(rgb, index, t)
        timeline.check_complete(info, "torchcodec", report)


def _reason(error: Exception) -> str:
    """torchcodec's message without its C++ source location."""
    return str(error).strip().rsplit(", ", 1)[-1]
