"""Motion between the frames of a window: composing stored per-pair flow and homographies,
resizing flow, and warping frames onto a key frame. Pure torch functions, no store.

Conventions (the store's): pair ``k`` is stored frame ``k`` to ``k + 1``. A *flow* (2, h, w)
holds at each pixel p of frame ``k`` the displacement (dx, dy) in pixels such that
``frame_k(p) ~ frame_{k+1}(p + flow(p))``. A *homography* H_k (3, 3) maps pixel coordinates of
frame ``k + 1`` to frame ``k`` (homogeneous, x right, y down, pixel centres at integers).

* :func:`compose_flow` makes the flow from stored frame ``i`` to ``j > i`` by chaining the
  pair flows, each later one sampled where the earlier one points
  (``F_ij(p) = F_i(p) + F_(i+1)j(p + F_i(p))``, bilinear). For ``j < i`` it is the negated
  forward flow ``-F_ji`` (an approximation: exact for a uniform translation), and zero for
  ``j == i``.
* :func:`compose_flows` makes the flows from one key frame to several frames in one sweep
  each way (linear in the span, where one :func:`compose_flow` per frame is quadratic):
  forwards ``F_k(j+1)(p) = F_kj(p) + F_j(p + F_kj(p))``, backwards the recursion above,
  negated.
* :func:`chain_pairs` and :func:`compose_flows_batch` are the same chaining for many windows
  at once (all items advance together: one batched sampling per step); the single-window
  functions run on them.
* :func:`compose_homography` maps frame ``f`` coordinates to frame ``key`` coordinates (the
  product of the pairs between them, or its inverse backwards); :func:`homographies_to_key`
  for every frame of a window from one running product.
* :func:`box_to_frame` and :func:`crop_flow` carry a crop box resized to an output size (and
  a flip) into the motion: the matrix from output to frame pixels, and the flow of a box
  resampled at the output pixels with its vectors in output pixels (one ``grid_sample``).
* :func:`warp_by_homography` / :func:`warp_by_flow` resample frames onto the key frame
  (bilinear, zeros outside), keeping the dtype (uint8 is rounded back).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch.nn import functional as F

__all__ = [
    "box_to_frame",
    "chain_pairs",
    "compose_flow",
    "compose_flows",
    "compose_flows_batch",
    "compose_homography",
    "crop_flow",
    "homographies_to_key",
    "resize_flow",
    "warp_by_flow",
    "warp_by_homography",
]


def _base_grid(h: int, w: int, dtype=torch.float32) -> torch.Tensor:
    """(2, h, w) pixel coordinates (x, y)."""
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=dtype), torch.arange(w, dtype=dtype), indexing="ij"
    )
    return torch.stack([xs, ys])


def _sample_at(img: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    """Bilinear samples of ``img`` (N, C, h, w) at each pixel p moved by ``flow`` (N, 2, h, w)
    (x, y): ``img(p + flow(p))``, zeros outside. OpenCV's ``remap`` per plane (fixed-point
    weights, 1/32 pixel; float32 CPU tensors), which ran 3-4x faster than torch's
    ``grid_sample`` (align_corners, zero padding: the same samples to ~1e-3) on this
    machine; other devices keep ``grid_sample``."""
    if img.device.type != "cpu" or flow.device.type != "cpu":
        return _grid_sample_at(img, flow)
    import cv2  # deferred: optional/heavy dependency

    n, _, h, w = flow.shape
    src = img.float().contiguous().numpy()
    fl = flow.float().contiguous().numpy()
    xs, ys = _pixel_grid(h, w)
    out = np.empty((n, src.shape[1], h, w), np.float32)
    for k in range(n):
        mx, my = xs + fl[k, 0], ys + fl[k, 1]
        for c in range(src.shape[1]):
            cv2.remap(
                src[k, c],
                mx,
                my,
                cv2.INTER_LINEAR,
                dst=out[k, c],
                borderMode=cv2.BORDER_CONSTANT,
                borderValue=0.0,
            )
    return torch.from_numpy(out)


@functools.lru_cache(maxsize=32)
def _pixel_grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    ys, xs = np.meshgrid(
        np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij"
    )
    return xs, ys


def _grid_sample_at(img: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    """:func:`_sample_at` by ``grid_sample`` (any device). The sampling grid is built one
    component at a time (``(p + flow) * 2 / (size - 1) - 1``, align_corners), contiguous
    reads only."""
    n, _, h, w = flow.shape
    sx, sy = 2.0 / max(img.shape[-1] - 1, 1), 2.0 / max(img.shape[-2] - 1, 1)
    bias = _bias(h, w, sx, sy)
    grid = torch.empty(n, h, w, 2, dtype=torch.float32, device=flow.device)
    grid[..., 0] = torch.add(bias[0].to(flow.device), flow[:, 0], alpha=sx)
    grid[..., 1] = torch.add(bias[1].to(flow.device), flow[:, 1], alpha=sy)
    return F.grid_sample(img, grid, mode="bilinear", padding_mode="zeros", align_corners=True)


@functools.lru_cache(maxsize=32)
def _bias(h: int, w: int, sx: float, sy: float) -> torch.Tensor:
    """(2, h, w): each pixel's normalised position (x sx - 1, y sy - 1)."""
    return _base_grid(h, w) * torch.tensor([sx, sy]).view(2, 1, 1) - 1.0


def resize_flow(flow: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Flow (..., 2, h, w) resized to ``size`` (H, W), the vectors scaled by W/w and H/h."""
    h, w = flow.shape[-2:]
    if (h, w) == tuple(size):
        return flow
    lead = flow.shape[:-3]
    x = flow.reshape(-1, 2, h, w).float()
    out = F.interpolate(x, size=tuple(size), mode="bilinear", align_corners=False)
    scale = torch.tensor([size[1] / w, size[0] / h], dtype=out.dtype).reshape(1, 2, 1, 1)
    return (out * scale).reshape(*lead, 2, *size)


def chain_pairs(pairs: torch.Tensor, lo, hi) -> torch.Tensor:
    """(N, 2, h, w): item ``n`` is the flow through ``pairs[lo[n]] .. pairs[hi[n] - 1]`` (the
    pair flows of consecutive frames, ``hi > lo``), chained as :func:`compose_flow` does; all
    items advance together, one batched sampling per chaining step."""
    lo = np.asarray(lo, np.int64).reshape(-1)
    hi = np.asarray(hi, np.int64).reshape(-1)
    total = pairs[torch.from_numpy(hi - 1)].float()
    steps = hi - lo
    if not steps.size or int(steps.max()) <= 1:
        return total
    for m in range(1, int(steps.max())):  # F_kj = F_k + F_(k+1)j(p + F_k), k = j-1-m
        act = torch.from_numpy(np.flatnonzero(steps > m))
        step = pairs[torch.from_numpy(hi[act.numpy()] - 1 - m)].float()
        total[act] = step + _sample_at(total[act], step)
    return total


def compose_flow(pair_flows: torch.Tensor, first: int, i: int, j: int) -> torch.Tensor:
    """Flow (2, h, w) from stored frame ``i`` to stored frame ``j``, from ``pair_flows``
    (n, 2, h, w) holding pairs ``first .. first + n - 1`` (module doc)."""
    h, w = pair_flows.shape[-2:]
    if i == j:
        return torch.zeros(2, h, w, dtype=torch.float32)
    if j < i:
        return -compose_flow(pair_flows, first, j, i)
    return chain_pairs(pair_flows, [i - first], [j - first])[0]


def compose_flows(pair_flows: torch.Tensor, first: int, key: int, targets) -> torch.Tensor:
    """(len(targets), 2, h, w): the flow from stored frame ``key`` to each stored frame of
    ``targets``, from ``pair_flows`` (n, 2, h, w) holding pairs ``first .. first + n - 1``;
    one chaining sweep forwards and one backwards (module doc)."""
    t = np.asarray(targets, np.int64).reshape(1, -1)
    return compose_flows_batch(pair_flows, np.array([-first]), np.array([key]), t)[0]


def compose_flows_batch(pairs: torch.Tensor, offset, keys, targets) -> torch.Tensor:
    """(B, T, 2, h, w): :func:`compose_flows` of B windows at once, each from stored frame
    ``keys[b]`` to each of ``targets[b]`` (B, T), window b's stored pair k being
    ``pairs[k + offset[b]]``. The windows sweep together: one batched sampling per step
    forwards and one per step backwards."""
    offset = np.asarray(offset, np.int64).reshape(-1)
    keys = np.asarray(keys, np.int64).reshape(-1)
    targets = np.asarray(targets, np.int64)
    bsz, t = targets.shape
    h, w = pairs.shape[-2:]
    out = torch.zeros(bsz, t, 2, h, w, dtype=torch.float32)
    for sign in (1, -1):  # forwards: F_key,j -> F_key,(j+1); backwards: F_(k+1),key -> F_k,key
        ahead = (targets - keys[:, None]) * sign  # steps from the key to each target
        reach = np.where(ahead > 0, ahead, 0).max(1) if t else np.zeros(bsz, np.int64)
        total = torch.zeros(bsz, 2, h, w, dtype=torch.float32)
        for m in range(int(reach.max()) if bsz else 0):
            act = np.flatnonzero(reach > m)
            pair = keys[act] + m if sign > 0 else keys[act] - 1 - m
            step = pairs[torch.from_numpy(pair + offset[act])].float()
            if act.size == bsz:  # every window still sweeping: no gather, no scatter
                total = (
                    total + _sample_at(step, total) if sign > 0 else step + _sample_at(total, step)
                )
            else:
                at = torch.from_numpy(act)
                if sign > 0:
                    total[at] = total[at] + _sample_at(step, total[at])
                else:
                    total[at] = step + _sample_at(total[at], step)
            rows, cols = np.nonzero(ahead[act] == m + 1)
            if rows.size:
                got = total[torch.from_numpy(act[rows])]
                out[torch.from_numpy(act[rows]), torch.from_numpy(cols)] = got * sign
    return out


def compose_homography(pair_h: np.ndarray, key: int, f: int) -> np.ndarray:
    """(3, 3) mapping frame ``f`` coordinates to frame ``key`` coordinates, from ``pair_h``
    (F-1, 3, 3) whose entry ``k`` maps frame ``k + 1`` to frame ``k``."""
    return homographies_to_key(pair_h, key, [f])[0]


def homographies_to_key(pair_h: np.ndarray, key: int, frames) -> np.ndarray:
    """(len(frames), 3, 3): :func:`compose_homography` for each stored frame of ``frames``,
    from one running product over the span (``M_f`` maps frame f to the span's first frame;
    frame f to the key is ``inv(M_key) M_f``)."""
    f = np.asarray(frames, np.int64).reshape(-1)
    lo = min(int(key), int(f.min())) if f.size else int(key)
    hi = max(int(key), int(f.max())) if f.size else int(key)
    prefix = np.empty((hi - lo + 1, 3, 3))
    prefix[0] = np.eye(3)
    for k in range(lo, hi):
        prefix[k - lo + 1] = prefix[k - lo] @ np.asarray(pair_h[k], np.float64)
    return np.linalg.inv(prefix[int(key) - lo]) @ prefix[f - lo]


def box_to_frame(boxes, out_size: tuple[int, int], flip=None) -> np.ndarray:
    """(B, 3, 3) mapping output pixel coordinates of a crop to the frame's: output pixel
    (u, v) of a ``boxes`` (B, 4) (y0, x0, h, w) crop resized to ``out_size`` (h', w') lies at
    frame pixel (x0 + (u + 0.5) w / w' - 0.5, ...) (pixel centres at integers, as a resize
    without ``align_corners``); ``flip`` (B,) mirrors u first."""
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    oh, ow = int(out_size[0]), int(out_size[1])
    sx, sy = b[:, 3] / ow, b[:, 2] / oh
    m = np.zeros((len(b), 3, 3))
    m[:, 0, 0], m[:, 1, 1], m[:, 2, 2] = sx, sy, 1.0
    m[:, 0, 2] = b[:, 1] + 0.5 * sx - 0.5
    m[:, 1, 2] = b[:, 0] + 0.5 * sy - 0.5
    if flip is not None:
        f = np.asarray(flip, bool).reshape(-1)
        m[f, 0, 2] += sx[f] * (ow - 1)
        m[f, 0, 0] = -sx[f]
    return m


def crop_flow(
    flow: torch.Tensor,
    boxes,
    frame_size: tuple[int, int],
    out_size: tuple[int, int],
    flip=None,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Flow (B, n, 2, h, w) of frames of ``frame_size`` (H, W) cropped to ``boxes`` (B, 4)
    (y0, x0, bh, bw in frame pixels; mapped to the flow's own resolution) and resized to
    ``out_size``, vectors in output pixels; dx negated and mirrored where ``flip`` (B,).
    Bilinear sampling at the output pixels, an axis-aligned ``cv2.warpAffine`` per plane
    (edge values repeated past the frame's border; no antialiasing when the box shrinks;
    OpenCV's interpolation weights are fixed point, 1/32 pixel: on smooth flow within 1e-3 of
    torch's ``grid_sample``, which took 3.4 ms a 7-pair 112x112 window here against
    ~0.3 ms), or plain slicing where every box is whole flow
    pixels at the output size. Written into ``out`` (B, n, 2, h', w') when given (a view of
    a bigger buffer will do)."""
    bsz, n, _, h, w = flow.shape
    big_h, big_w = int(frame_size[0]), int(frame_size[1])
    oh, ow = int(out_size[0]), int(out_size[1])
    b = np.asarray(boxes, np.float64).reshape(bsz, 4)
    fl = np.zeros(bsz, bool) if flip is None else np.asarray(flip, bool).reshape(bsz)
    scale = np.stack([big_w / w * ow / b[:, 3], big_h / h * oh / b[:, 2]], 1)  # (B, 2)
    scale[fl, 0] *= -1.0
    fy, fx = h / big_h, w / big_w
    y0, x0 = b[:, 0] * fy, b[:, 1] * fx
    whole = (
        np.allclose(b[:, 2] * fy, oh)
        and np.allclose(b[:, 3] * fx, ow)
        and np.allclose(y0, np.rint(y0))
        and np.allclose(x0, np.rint(x0))
    )
    if out is None:
        out = torch.empty(bsz, n, 2, oh, ow, dtype=torch.float32)
    if whole:  # the box is whole flow pixels at the output size: slices, no resampling
        for k, (y, x) in enumerate(zip(np.rint(y0).astype(int), np.rint(x0).astype(int))):
            part = flow[k, :, :, y : y + oh, x : x + ow]
            out[k] = part.flip(-1) if fl[k] else part
        out[torch.from_numpy(np.flatnonzero(fl)), :, 0] *= -1.0  # the scale is 1 but for dx
        return out
    import cv2  # deferred: optional/heavy dependency

    m = box_to_frame(b, (oh, ow), fl)  # output pixel -> frame pixel
    # frame pixel x -> flow pixel (x + 0.5) w / W - 0.5 (pixel centres, any resolution)
    ax, ay = m[:, 0, 0] * fx, m[:, 1, 1] * fy
    bx, by = (m[:, 0, 2] + 0.5) * fx - 0.5, (m[:, 1, 2] + 0.5) * fy - 0.5
    src = flow.reshape(bsz, n * 2, h, w).float().contiguous().numpy()
    got = np.empty((bsz, n * 2, oh, ow), np.float32)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    for k in range(bsz):  # an axis-aligned affine map per window, every plane in OpenCV
        mk = np.array([[ax[k], 0.0, bx[k]], [0.0, ay[k], by[k]]])
        for p in range(n * 2):
            cv2.warpAffine(
                src[k, p],
                mk,
                (ow, oh),
                dst=got[k, p],
                flags=flags,
                borderMode=cv2.BORDER_REPLICATE,
            )
    factor = torch.from_numpy(scale.astype(np.float32)).view(bsz, 1, 2, 1, 1)
    return torch.mul(torch.from_numpy(got).view(bsz, n, 2, oh, ow), factor, out=out)


def _like(warped: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
    if frames.dtype == torch.uint8:
        return warped.round_().clamp_(0, 255).to(torch.uint8)
    return warped.to(frames.dtype)


def warp_by_homography(frames: torch.Tensor, to_key: np.ndarray) -> torch.Tensor:
    """Frames (T, C, H, W) warped onto the key frame: ``to_key`` (T, 3, 3) maps each frame's
    coordinates to the key frame's (identity for the key itself). Output pixel p of frame
    t is frame t at ``inv(to_key[t]) p``."""
    t, _, h, w = frames.shape
    inv = np.linalg.inv(np.asarray(to_key, np.float64))  # key -> t, pixels
    if frames.dtype == torch.uint8 and frames.device.type == "cpu":
        return _warp_planes(frames, inv, None)
    # then pixels -> normalised (align_corners), before the division by z: one matmul gives
    # the grid's numerators and z
    norm = np.array([[2.0 / max(w - 1, 1), 0, -1], [0, 2.0 / max(h - 1, 1), -1], [0, 0, 1]])
    g = torch.from_numpy(norm @ inv).float()  # (T, 3, 3)
    base = _base_grid(h, w).reshape(2, -1)
    homog = torch.cat([base, torch.ones(1, base.shape[1])])  # (3, h*w)
    mapped = g @ homog  # (T, 3, h*w)
    grid = (mapped[:, :2] / mapped[:, 2:].clamp_min(1e-8)).transpose(1, 2)
    grid = grid.contiguous().view(t, h, w, 2)
    out = F.grid_sample(frames.float(), grid, mode="bilinear", align_corners=True)
    return _like(out, frames)


def _warp_planes(
    frames: torch.Tensor, key_to_frame: np.ndarray | None, flow: torch.Tensor | None
) -> torch.Tensor:
    """uint8 frames (T, C, H, W) on the CPU warped frame by frame with OpenCV's SIMD
    bilinear (fixed point, 1/32 pixel), zeros outside: output p of frame t is frame t at
    ``key_to_frame[t] p`` (a homography), or at ``p + flow[t](p)``. Several times faster
    here than a float ``grid_sample`` with its conversions both ways, within a grey level
    or two of it.

    A homography warps plane by plane straight into the output (15% faster than merging
    the planes, warping them interleaved and splitting them back: the same pixels), and a
    frame whose map is the identity (the key frame itself) is copied. Flow warps the frame
    interleaved: ``remap`` converts its float map on every call, so once per frame is
    cheaper than once per plane."""
    import cv2  # deferred: optional/heavy dependency

    t, c, h, w = frames.shape
    planes = frames.contiguous().numpy()
    out = np.empty_like(planes)
    if flow is None:
        assert key_to_frame is not None
        flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        same = np.abs(np.asarray(key_to_frame) - np.eye(3)).max(axis=(1, 2)) < 1e-9
        for k in range(t):
            if same[k]:
                out[k] = planes[k]
                continue
            for p in range(c):
                cv2.warpPerspective(
                    planes[k, p],
                    key_to_frame[k],
                    (w, h),
                    dst=out[k, p],
                    flags=flags,
                    borderValue=0,
                )
        return torch.from_numpy(out)
    if c > 4:  # OpenCV warps up to 4 interleaved channels at once
        parts = frames.split(4, 1)
        return torch.cat([_warp_planes(p, None, flow) for p in parts], 1)
    moved = (flow + _base_grid(h, w)).numpy()  # (T, 2, H, W) where each pixel reads
    for k in range(t):  # one call a frame, its planes interleaved (SIMD merge and split)
        src = cv2.merge(list(planes[k])) if c > 1 else planes[k, 0]
        got = cv2.remap(src, moved[k, 0], moved[k, 1], cv2.INTER_LINEAR, borderValue=0)
        out[k] = np.stack(cv2.split(got)) if c > 1 else got
    return torch.from_numpy(out)


def warp_by_flow(frames: torch.Tensor, key_to_frame: torch.Tensor) -> torch.Tensor:
    """Frames (T, C, H, W) warped onto the key frame by ``key_to_frame`` (T, 2, H, W), the
    flow from the key frame to each frame (zero for the key): output p = frame_t(p + flow)."""
    if frames.dtype == torch.uint8 and frames.device.type == "cpu":
        return _warp_planes(frames, None, key_to_frame.float())
    return _like(_sample_at(frames.float(), key_to_frame.float()), frames)
