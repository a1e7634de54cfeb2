"""Export a checkpoint to ONNX and run it in ONNX Runtime, preparing the input by the recipe
the ONNX file carries in its metadata (PyAV, OpenCV and numpy; no hyperframes at run time
past the export).

    pip install 'hyperframes-video[export]'
    python examples/onnx_predict.py runs/r18/best.pt video.mp4 --onnx model.onnx --stride 4

The recipe's steps: decode to RGB24, resample to the model's rate by timestamp, scale to the
store's size with FFmpeg's area filter, take the central crop, scale the values, cut windows
of T frames ``frame_stride`` apart, and lay them out as the model's layout says.
"""

from __future__ import annotations

import argparse
import json
import math

import av
import cv2
import numpy as np
import onnxruntime as ort

from hyperframes.infer import export_onnx


def decoded_rgb(video: str, size: str | None) -> tuple[list[np.ndarray], list[float]]:
    """Every frame as RGB24, scaled to the store's size ('N': short side N; 'HxW') by FFmpeg's
    area filter in the conversion, and its time in seconds."""
    frames, times = [], []
    with av.open(video) as container:
        stream = container.streams.video[0]
        for frame in container.decode(stream):
            h, w = frame.height, frame.width
            kwargs = {}
            if size is not None:
                if "x" in size:
                    hh, ww = (int(v) for v in size.split("x"))
                else:
                    n = int(size)
                    hh, ww = (n, round(w * n / h)) if h <= w else (round(h * n / w), n)
                kwargs = {"width": ww, "height": hh, "interpolation": "AREA"}
            frames.append(frame.to_ndarray(format="rgb24", **kwargs))
            times.append(float(frame.time))
    return frames, times


def resampled(times: list[float], fps: float | None) -> list[int]:
    """The decoded frame each target time p0 + k / fps takes (nearest; ties: the earlier)."""
    if fps is None:
        return list(range(len(times)))
    t = np.asarray(times)
    last = t[-1] - t[-2] if len(t) > 1 else 1 / fps
    count = math.floor((t[-1] - t[0] + last) * fps + 1e-6)
    targets = t[0] + np.arange(count) / fps
    right = np.clip(np.searchsorted(t, targets), 1, len(t) - 1)
    left = right - 1
    return np.where(targets - t[left] <= t[right] - targets, left, right).tolist()


def prepared(rgb: np.ndarray, recipe: dict) -> np.ndarray:
    """(3, H, W) float32: the central crop (OpenCV, area when it shrinks) and the values."""
    crop = recipe["crop"]
    if crop is not None:
        h, w = rgb.shape[:2]
        s = min(h, w)
        top, left = (h - s) // 2, (w - s) // 2
        square = rgb[top : top + s, left : left + s]
        if s != crop:
            how = cv2.INTER_AREA if s > crop else cv2.INTER_LINEAR
            square = cv2.resize(square, (crop, crop), interpolation=how)
        rgb = square
    x = rgb.astype(np.float32) / 255
    x = (x - np.asarray(recipe["mean"], np.float32)) / np.asarray(recipe["std"], np.float32)
    return x.transpose(2, 0, 1)


def window_starts(n: int, span: int, stride: int) -> list[int]:
    """Starts 0, S, 2S, ... of the windows that fit, plus one ending on the last frame."""
    starts = list(range(0, n - span + 1, stride))
    if starts and starts[-1] != n - span:
        starts.append(n - span)
    return starts


def laid_out(window: list[np.ndarray], layout: str) -> np.ndarray:
    if layout == "temporal":
        return np.stack(window)  # (T, C, H, W)
    if layout == "channel":
        return np.concatenate(window)  # (3T, H, W), frame-major: R G B of frame 0, then 1 ...
    if layout == "conv3d":
        return np.stack(window, axis=1)  # (C, T, H, W)
    raise SystemExit(f"layout {layout!r}: this example handles temporal, channel and conv3d")


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", help="a hyperframes train checkpoint (best.pt)")
    p.add_argument("video")
    p.add_argument("--onnx", default="model.onnx")
    p.add_argument("--stride", type=int, default=4, help="frames between window starts")
    args = p.parse_args(argv)

    export_onnx(args.checkpoint, args.onnx)  # checked against onnxruntime on export
    session = ort.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    recipe = json.loads(meta["hyperframes.preprocessing"])
    classes = json.loads(meta["classes"])
    frames, step = json.loads(meta["frames"]), json.loads(meta["frame_stride"])

    rgb, times = decoded_rgb(args.video, recipe["store_size"])
    keep = resampled(times, recipe["fps"])
    ready = [prepared(rgb[i], recipe) for i in keep]
    span = (frames - 1) * step + 1
    out = []
    for start in window_starts(len(ready), span, args.stride):
        idx = list(range(start, start + span, step))
        x = laid_out([ready[i] for i in idx], recipe["layout"])[None]
        logits = session.run(None, {session.get_inputs()[0].name: x})[0][0]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        source = [keep[i] for i in idx]
        out.append({"source_frames": source, "probs": dict(zip(classes, probs.tolist()))})
        best = int(probs.argmax())
        print(f"frames {source[0]}-{source[-1]}: {classes[best]} {probs[best]:.3f}")
    return out


if __name__ == "__main__":
    main()
