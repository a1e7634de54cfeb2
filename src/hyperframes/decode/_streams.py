"""Which video stream of a file to decode: one rule for every backend, resolved with PyAV.

``stream=None`` picks the *best* video stream: the largest width × height among the video streams
that are not attached pictures (cover art), ties going to the lowest index. ``stream=k`` picks
the k-th video stream (``v:k``, counting video streams only). Backends that take a stream number
get the absolute index; backends that cannot choose (decord, OpenCV) are checked to be decoding
the stream that was asked for.
"""

from __future__ import annotations

import dataclasses
import math

from .._core._errors import ConfigError, DecodeError, InputError


@dataclasses.dataclass(frozen=True)
class VideoStreamHeader:
    """One video stream of a container, as its header describes it."""

    absolute_index: int  # index among all the container's streams
    video_index: int  # index among its video streams (v:k)
    codec: str  # "unknown" when FFmpeg has no decoder for it
    width: int  # coded (before rotation); 0 when unknown
    height: int
    fps: float | None
    frames: int | None  # frame count claimed by the header
    attached_picture: bool

    def describe(self) -> str:
        kind = ", cover art" if self.attached_picture else ""
        return f"v:{self.video_index} ({self.codec} {self.width}x{self.height}{kind})"


def list_video_streams(container) -> list[VideoStreamHeader]:
    """The video streams of an open PyAV container, in file order."""
    import av  # deferred: optional/heavy dependency

    attached = int(av.stream.Disposition.attached_pic)
    out = []
    for k, s in enumerate(container.streams.video):
        cc = s.codec_context
        rate = s.average_rate or s.guessed_rate
        fps = float(rate) if rate else None
        out.append(
            VideoStreamHeader(
                absolute_index=s.index,
                video_index=k,
                codec=cc.codec.canonical_name if cc is not None else "unknown",
                width=cc.width if cc is not None else 0,
                height=cc.height if cc is not None else 0,
                fps=fps if fps and math.isfinite(fps) else None,
                frames=s.frames or None,
                attached_picture=bool(int(s.disposition) & attached),
            )
        )
    return out


def choose_video_stream(
    path: str, streams: list[VideoStreamHeader], stream: int | None, others: str = ""
) -> VideoStreamHeader:
    """Apply the stream rule; ``InputError`` when there is no such video stream."""
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
        raise ConfigError(f"stream must be None or an int >= 0 (v:k), got {stream!r}")
    if not streams:
        found = f"; its streams are: {others}" if others else ""
        raise InputError(f"{path}: has no video stream{found}")
    if stream is None:
        pictures = [s for s in streams if not s.attached_picture] or streams
        return max(pictures, key=lambda s: (s.width * s.height, -s.video_index))
    if not 0 <= stream < len(streams):
        listed = ", ".join(s.describe() for s in streams)
        raise InputError(
            f"{path}: video stream index {stream} is out of range: the file has "
            f"{len(streams)} video stream(s): {listed}"
        )
    return streams[stream]


def check_library_stream(
    path: str,
    backend: str,
    rule: str,
    wanted: VideoStreamHeader,
    picked: list[VideoStreamHeader],
) -> None:
    """Raise ``DecodeError`` unless ``picked`` (streams matching what the library reports) is ``wanted``.

    ``rule`` says how the library chooses, for the message.
    """
    if picked == [wanted]:
        return
    if wanted not in picked:
        got = ", ".join(s.describe() for s in picked) or "another stream"
        raise DecodeError(
            f"{path}: {backend} cannot choose a video stream ({rule}): it decodes {got}, "
            f"not the requested {wanted.describe()}; use the pyav or torchcodec decoder"
        )
    raise DecodeError(
        f"{path}: {backend} cannot choose a video stream ({rule}) and several video streams "
        f"look alike ({', '.join(s.describe() for s in picked)}), so which one it decodes is "
        "unknown; use the pyav or torchcodec decoder"
    )


def library_pick(
    streams: list[VideoStreamHeader],
    *,
    fps: float | None = None,
    frames: int | None = None,
    size: tuple[int, int] | None = None,
) -> list[VideoStreamHeader]:
    """The video streams consistent with what a library reports about the stream it decodes.

    Criteria (fps, then frame count, then size as an unordered pair) narrow the list in turn;
    one that would leave nothing is skipped (headers disagree, e.g. a truncated file's count).
    """
    picked = [s for s in streams if not s.attached_picture] or streams
    tests = (
        lambda s: not (fps and s.fps) or abs(fps - s.fps) <= 1e-3 * s.fps,
        lambda s: not (frames and s.frames) or frames == s.frames,
        lambda s: not (size and s.width) or sorted(size) == sorted((s.width, s.height)),
    )
    for test in tests:
        if len(picked) > 1:
            picked = [s for s in picked if test(s)] or picked
    return picked
