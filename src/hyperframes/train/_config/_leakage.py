"""Leakage check: the same source video in two splits or under two labels, found by its bytes
and by its content.

Two store entries are "the same video" when their source files have the same content hash
(xxh3-128 of the bytes; for a frame folder, of its files' names and bytes). Only sources whose
size collides with another's are hashed, so the check reads little on real datasets. A source
that no longer exists cannot be checked and is counted in ``unchecked``.

Two store entries also show the same clip when their perceptual signatures match
(:mod:`hyperframes.train._config._similar`): a remux, a re-encode or a resized copy has other bytes
but the same content, and so does a horizontal mirror or a crop keeping 70% of the area or
more. Those pairs are ``similar`` (with their similarity, ``1 - mean
differing bits / 64``); those across splits or labels are leaks too. Videos without enough
structure to compare (flat frames) are counted in ``content_unchecked``.

:func:`check_leakage` raises :class:`DataError` listing the offending groups unless
``allow=True``, in which case the report is returned for logging.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from pathlib import Path

import xxhash

from ..._core._errors import DataError
from ...store import CROP_MAX_VIDEOS
from ._similar import find_similar

__all__ = ["LeakageReport", "check_leakage", "content_hash", "find_leakage"]

_BLOCK = 1 << 20


def content_hash(path: str | os.PathLike) -> str:
    """xxh3-128 hex digest of a file's bytes, or of a folder's (name, bytes) pairs in order."""
    p = Path(path)
    h = xxhash.xxh3_128()
    files = sorted(e for e in p.iterdir() if e.is_file()) if p.is_dir() else [p]
    for f in files:
        if p.is_dir():
            h.update(f.name.encode() + b"\0")
        with open(f, "rb") as fh:
            while block := fh.read(_BLOCK):
                h.update(block)
    return h.hexdigest()


@dataclasses.dataclass
class LeakageReport:
    """Groups of store videos with identical sources (each a list of dicts: id, path, split,
    label), those spanning several splits or labels, and how many sources could not be read;
    ``similar``: pairs of videos with the same content but not the same bytes
    (:func:`~hyperframes.train._config._similar.find_similar`), and how many videos could not be
    compared by content."""

    duplicates: list[list[dict]]
    cross_split: list[list[dict]]
    cross_label: list[list[dict]]
    unchecked: int
    similar: list[dict] = dataclasses.field(default_factory=list)
    content_unchecked: int = 0
    #: whether crops were looked for (not over more than ``CROP_MAX_VIDEOS`` videos)
    crops_checked: bool = True

    @property
    def similar_across(self) -> list[dict]:
        """The ``similar`` pairs whose videos are in two splits or under two labels."""
        return [p for p in self.similar if p["across"]]

    @property
    def leaks(self) -> bool:
        return bool(self.cross_split or self.cross_label or self.similar_across)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self, limit: int = 10) -> str:
        lines = []
        for kind, groups in (("splits", self.cross_split), ("labels", self.cross_label)):
            for g in groups[:limit]:
                members = "; ".join(
                    f"{m['path']} (split {m['split']}, label {m['label']})" for m in g
                )
                lines.append(f"  same source in two {kind}: {members}")
            if len(groups) > limit:
                lines.append(f"  ... and {len(groups) - limit} more groups across {kind}")
        pairs = self.similar_across
        for p in pairs[:limit]:
            a, b = p["a"], p["b"]
            lines.append(
                f"  same content in two {' and two '.join(k + 's' for k in p['across'])}"
                + (" (one a crop of the other)" if p.get("match") == "a crop" else "")
                + f" (similarity {p['similarity']:.2f}: {p['distance_bits']:g} of 64 bits differ "
                f"on average over {p['frames_compared']} frames): {a['path']} (split "
                f"{a['split']}, label {a['label']}) ~ {b['path']} (split {b['split']}, label "
                f"{b['label']})"
            )
        if len(pairs) > limit:
            lines.append(f"  ... and {len(pairs) - limit} more pairs with the same content")
        return "\n".join(lines)


def find_leakage(store, roles: dict[int, str]) -> LeakageReport:
    """Compare the sources of the videos in ``roles`` (video id → split name)."""
    videos = store.videos
    by_size: dict[int, list[int]] = defaultdict(list)
    for vid in roles:
        by_size[int(videos[vid].source_bytes)].append(vid)
    by_hash: dict[str, list[int]] = defaultdict(list)
    unchecked = 0
    for group in by_size.values():
        if len(group) < 2:
            continue
        for vid in group:
            try:
                by_hash[content_hash(videos[vid].path)].append(vid)
            except OSError:
                unchecked += 1
    dupes, splits, labels = [], [], []
    for group in by_hash.values():
        if len(group) < 2:
            continue
        members = [
            {
                "id": int(v),
                "path": videos[v].path,
                "split": roles[v],
                "label": videos[v].label,
            }
            for v in sorted(group)
        ]
        dupes.append(members)
        if len({m["split"] for m in members}) > 1:
            splits.append(members)
        if len({m["label"] for m in members}) > 1:
            labels.append(members)
    same_bytes = {int(v): k for k, group in enumerate(by_hash.values()) for v in group}
    similar, content_unchecked = find_similar(store, roles)
    crops_checked = len(roles) <= CROP_MAX_VIDEOS
    similar = [
        p for p in similar if same_bytes.get(p["a"]["id"], -1) != same_bytes.get(p["b"]["id"], -2)
    ]
    return LeakageReport(
        dupes, splits, labels, unchecked, similar, content_unchecked, crops_checked
    )


def check_leakage(store, roles: dict[int, str], *, allow: bool = False) -> LeakageReport:
    """:func:`find_leakage`, raising :class:`DataError` on leaks unless ``allow``."""
    report = find_leakage(store, roles)
    if report.leaks and not allow:
        raise DataError(
            f"leakage in {store.path}: {len(report.cross_split)} source video(s) appear in more "
            f"than one split and {len(report.cross_label)} under more than one label, and "
            f"{len(report.similar_across)} pair(s) of videos show the same content (a remux, "
            "re-encode, resized, mirrored or cropped copy, by perceptual signature) across "
            "splits or labels:\n"
            f"{report.describe()}\nremove the duplicates (or fix their labels), or set "
            "data.allow_leakage: true to train anyway"
        )
    return report
