"""A ``Predictor`` on a live stream: frames pushed one by one as they arrive (a camera, an
RTSP URL or a file), predictions printed as soon as each window is complete.

    python examples/live_stream.py runs/r18/best.pt 0            # camera 0
    python examples/live_stream.py runs/r18/best.pt rtsp://host/stream --stride 4 --ema 0.7

The predictor resamples to the model's frame rate by the frames' times, resizes and crops as
the model's input contract says, and smooths the logits over windows (``--ema``).
"""

from __future__ import annotations

import argparse
import time

import cv2

from hyperframes.infer import Predictor


def main(argv: list[str] | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint")
    p.add_argument("source", help="a camera index (0), a stream URL or a video file")
    p.add_argument("--stride", type=int, default=4, help="frames between window starts")
    p.add_argument("--ema", type=float, default=0.0, help="smoothing of logits over windows")
    p.add_argument("--max-frames", type=int, default=None, help="stop after this many frames")
    args = p.parse_args(argv)

    predictor = Predictor.from_checkpoint(
        args.checkpoint,
        stride=args.stride,
        ema=args.ema,
        frame_batch=1,  # lowest latency
    )
    source = int(args.source) if args.source.isdigit() else args.source
    capture = cv2.VideoCapture(source)
    if not capture.isOpened():
        raise SystemExit(f"{args.source}: cannot be opened by OpenCV")
    start, pushed, predictions = time.monotonic(), 0, []

    def report(ready) -> None:
        for pred in ready:
            best = int(pred.probs.argmax())  # probs: (K,), in the order of pred.classes
            when = f"{pred.start_seconds:7.2f}-{pred.end_seconds:.2f} s"
            print(f"{when}: {pred.classes[best]} {pred.probs[best]:.3f}")
        predictions.extend(ready)

    try:
        while args.max_frames is None or pushed < args.max_frames:
            ok, bgr = capture.read()
            if not ok:
                break
            if isinstance(source, int):
                pts = time.monotonic() - start  # a camera: the time of arrival
            else:
                pts = capture.get(cv2.CAP_PROP_POS_MSEC) / 1000  # a file or stream: its clock
            report(predictor.push(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), pts))
            pushed += 1
        report(predictor.flush(name=str(args.source)))
    finally:
        capture.release()
    return predictions


if __name__ == "__main__":
    main()
