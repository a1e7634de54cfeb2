"""Bounded work from small inputs (issue 40, item 2): each crafted input below is a few bytes or
kilobytes made by the test, and asks for gigabytes or hours; each is refused early, with the
bound named, before anything of that size is allocated."""

from __future__ import annotations

import json
import re
import shutil
import time
import zipfile
from fractions import Fraction

import pytest
import torch

from _media import write_timed_video
from hyperframes import ConfigError, InputError, StoreError
from hyperframes._core._limits import MAX_CLASSES, MAX_MANIFEST_BYTES
from hyperframes.build import BuildOptions
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.cli import main
from hyperframes.infer import export_onnx, load_inference_model, predict_video
from hyperframes.inputs import scan_inputs
from hyperframes.models._weights import read_state_dict
from hyperframes.store import open_store, verify_store
from hyperframes.train import load_checkpoint
from hyperframes.train._config._load import config_from_dict
from test_hostile_inputs import _refused_fast, _state

# --------------------------------------------------------------------------- labels


def _listed(tmp_path, name: str, text: str):
    for video in ("a.mp4", "b.mp4"):
        (tmp_path / video).write_bytes(b"")  # listed files exist; nothing is decoded
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "name, text, row, message",
    [
        (
            "list.txt",
            "a.mp4 3\nb.mp4 99999999999\n",
            "list.txt:2",
            r"class id 99999999999 is above the bound on classes; allowed: ids 0\.\.99999",
        ),
        (
            "metadata.csv",
            "file_name,label\na.mp4,1\nb.mp4,99999999999\n",
            "metadata.csv:3",
            r"class id 99999999999 is above the bound on classes",
        ),
        (
            "rows.csv",
            "path,label\na.mp4,1\nb.mp4,²\n",
            "rows.csv:3",
            r"label '²' reads as a number but is not a class id written in the digits 0-9",
        ),
    ],
    ids=["mmaction", "videofolder", "csv-superscript"],
)
def test_class_ids_are_bounded_before_a_class_list_is_made(tmp_path, name, text, row, message):
    path = _listed(tmp_path, name, text)
    data = tmp_path if name == "metadata.csv" else path  # a videofolder is read as a folder
    # a sound file of the same kind read first: what a reader imports once per process (the
    # CSV reader's pyarrow, ~25 MiB) is not work this input makes (an earlier test in the
    # same worker used to hide it)
    warm = tmp_path / "warm"
    warm.mkdir()
    scan_inputs(_listed(warm, name, text.rsplit("\n", 2)[0] + "\n"))
    err = _refused_fast(lambda: scan_inputs(data), InputError, seconds=2.0, mib=8)
    assert row in str(err)
    assert re.search(message, str(err))
    # the build says it in one line, stores nothing
    rc = main(["build", str(data), "--out", str(tmp_path / "store"), "--quiet"])
    assert rc != 0 and not (tmp_path / "store" / "manifest.json").exists()
    # the largest id the bound allows still makes its class list
    path = _listed(tmp_path, "ok.txt", f"a.mp4 0\nb.mp4 {MAX_CLASSES - 1}\n")
    assert len(scan_inputs(path).classes) == MAX_CLASSES


# --------------------------------------------------------------------------- checkpoints


def _expanded(tmp_path):
    """A 1 MB checkpoint holding a 1 GiB stride-0 tensor (its checksum entry need not match:
    it is refused before anything is hashed)."""
    entries = {"format": "hyperframes-checkpoint", "version": 2, **_state()}
    entries["pad"] = torch.zeros(1, dtype=torch.uint8).expand(1 << 30)
    entries["checksum"] = {"algorithm": "sha256", "digest": "0" * 64}
    torch.save(entries, tmp_path / "expanded.pt")
    return tmp_path / "expanded.pt"


def _zip_bomb(tmp_path):
    """A sound, signed checkpoint re-zipped with its entries deflated: 16 MiB of zeros inflate
    from a few kilobytes (a real bomb declares gigabytes the same way)."""
    state = {**_state(), "pad": torch.zeros(1 << 24, dtype=torch.uint8)}
    plain = save_checkpoint(tmp_path / "plain.pt", state)
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
    return bomb


@pytest.mark.parametrize(
    "craft, message",
    [
        (
            _expanded,
            r"refused: its tensors repeat 1,073,741,823 bytes beyond the storage they hold "
            r"\(e\.g\. 'pad' shows 1,073,741,824 bytes over 1 stored: an expanded, stride-0 "
            r"tensor\); allowed: at most 256 MiB",
        ),
        (
            _zip_bomb,
            r"refused: its entries declare [\d,]+ bytes once inflated from a [\d,]+-byte file; "
            r"allowed: at most 4 times the file's size",
        ),
    ],
    ids=["stride-0", "zip-bomb"],
)
def test_crafted_checkpoints_are_refused_before_they_are_expanded(tmp_path, craft, message):
    path = craft(tmp_path)
    assert path.stat().st_size < 2 << 20
    # eval, --resume, recalibrate read load_checkpoint; predict and export load_inference_model
    for read in (load_checkpoint, load_inference_model):
        start = time.perf_counter()
        with pytest.raises(InputError, match=rf"^checkpoint .*{path.name}: {message}"):
            read(path)
        assert time.perf_counter() - start < 5.0
    with pytest.raises(ConfigError, match=rf"^pretrained weights .*{path.name}: {message}"):
        read_state_dict(path)  # model.pretrained


def test_a_contract_too_large_to_run_is_refused_by_predict_and_export(tmp_path):
    state = _state()
    sound = load_inference_model(save_checkpoint(tmp_path / "ok.pt", state)).contract
    # each within its own bound (frames <= 4096, crop <= 8192), re-signed
    state["contract"] = sound.replace(frames=512, crop=2048).to_dict()
    path = save_checkpoint(tmp_path / "wide.pt", state)
    video = tmp_path / "v.mp4"
    video.write_bytes(b"")  # refused before the video is opened
    bound = r"allowed: at most 1,073,741,824 \(lower the batch, the frames or the frame size\)"
    err = _refused_fast(lambda: export_onnx(path, tmp_path / "m.onnx"), mib=64)
    assert re.search(
        rf"^checkpoint .*wide\.pt: export: batch x frames x channels x H x W = "
        rf"3 x 512 x 3 x 2048 x 2048 = .* values per model call .*{bound}",
        str(err),
    )
    err = _refused_fast(lambda: predict_video(path, video, out=tmp_path / "o"), mib=64)
    assert re.search(
        rf"^checkpoint .*wide\.pt: its input contract: batch x frames x channels "
        rf"x H x W = 8 x 512 x 3 x 2048 x 2048 = .*{bound}",
        str(err),
    )
    assert not (tmp_path / "m.onnx").exists() and not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- size options


def test_every_build_size_option_has_an_upper_bound(tmp_path, capsys):
    for flag, value, message in (
        (
            "--flow-size",
            "100000",
            "--flow-size: '100000' asks for frames of 100000 x 100000 "
            "pixels; allowed: sides of at most 8192",
        ),
        ("--size", "100000x64", "--size: '100000x64' asks for frames of 100000 x 64 pixels"),
        ("--workers", "100000", "--workers must be at most 1024, got 100000"),
        ("--chunk-frames", "1000000000", "--chunk-frames must be at most 1024, got 1000000000"),
    ):
        start = time.perf_counter()
        rc = main(["build", str(tmp_path), "--out", str(tmp_path / "s"), flag, value])
        err = capsys.readouterr().err
        assert rc != 0 and message in err and "Traceback" not in err, err
        assert time.perf_counter() - start < 2.0
    with pytest.raises(ConfigError, match="flow_size: '99999999999999999999' asks for"):
        BuildOptions(flow="dis", flow_size="99999999999999999999")


def test_model_options_are_checked_by_value(tmp_path):
    def config(options):
        return {
            "data": {"store": str(tmp_path), "frames": 4},
            "model": {"name": "r2plus1d_tiny", "num_classes": 3, "options": options},
        }

    _refused_fast(
        lambda: config_from_dict(config({"base_width": 100_000_000})),
        match=r"^model\.options: base_width must be at most 65536, got 100000000$",
        mib=64,
    )
    config_from_dict(config({"base_width": 8}))  # a sound width passes
    # widths each within bound, together too many parameters: counted on the meta device
    vit = config({"dim": 4096, "depth": 64, "heads": 4})
    vit["model"]["name"] = "video_vit_tiny"
    _refused_fast(
        lambda: config_from_dict(vit),
        match=r"^model\.options: video_vit_tiny with .* has [\d,]+ parameters; allowed: at most "
        r"2,147,483,648",
        seconds=20.0,
        mib=256,
    )


# --------------------------------------------------------------------------- predict's gaps


def test_predict_does_not_bridge_a_long_timestamp_gap(tmp_path):
    state = _state(**{"input.fps": 10.0})
    path = save_checkpoint(tmp_path / "best.pt", state)
    ms = Fraction(1, 1000)
    ticks = [100 * i for i in range(10)] + [1_000_000 + 100 * i for i in range(10)]
    video = write_timed_video(tmp_path / "gap.mkv", ticks, time_base=ms)  # a 1,000 s gap
    start = time.perf_counter()
    report = predict_video(path, video, out=tmp_path / "o")
    assert time.perf_counter() - start < 10.0
    # 20 frames at 10 fps: windows of 4 over each side of the gap, not 10,000 repeated frames
    assert report.frames == 20 and report.windows <= 20
    rows = (tmp_path / "o" / "timeline.csv").read_text().splitlines()
    assert len(rows) == report.windows + 1
    # --max-gap none bridges a gap as asked (what predict did before, whatever the gap)
    short = write_timed_video(tmp_path / "pause.mkv", [0, 100, 200, 8200], time_base=ms)
    argv = ["predict", str(path), str(short), "--out", str(tmp_path / "b"), "--quiet"]
    assert main([*argv, "--max-gap", "none"]) == 0
    # 8.2 s, the last frame lasting the last interval (8 s): 162 frames, 159 windows of 4
    assert len((tmp_path / "b" / "timeline.csv").read_text().splitlines()) == 1 + 159


# --------------------------------------------------------------------------- manifests


def test_a_huge_local_manifest_is_refused_before_it_is_read(tiny_motion_store, tmp_path):
    store = shutil.copytree(tiny_motion_store, tmp_path / "store")
    with open(store / "manifest.json", "r+b") as f:
        f.truncate(300 << 20)  # sparse: 300 MB that take no disk
    message = (
        rf"manifest\.json: is 314,572,800 bytes; allowed: a manifest of at most "
        rf"{MAX_MANIFEST_BYTES >> 20} MiB"
    )
    _refused_fast(lambda: open_store(store), StoreError, match=message, mib=8)
    _refused_fast(lambda: verify_store(store), StoreError, match=message, mib=8)


def test_a_huge_manifest_at_a_url_is_refused_before_it_is_fetched(
    tiny_motion_store, s3_url, monkeypatch
):
    from hyperframes.build._publish import publish_store
    from hyperframes.remote._files import filesystem
    from hyperframes.store import _folder
    from hyperframes.store._remote_store import RemoteFolder

    # the bound lowered to 1 MiB for this test (the server holds a real object past it; the
    # default's 64 MiB would take the test seconds to upload)
    monkeypatch.setattr(_folder, "MAX_MANIFEST_BYTES", 1 << 20)
    publish_store(tiny_motion_store, s3_url)
    manifest = json.loads((tiny_motion_store / "manifest.json").read_text())
    # the same manifest padded past the bound with spaces: valid JSON, that was read whole
    padded = json.dumps(manifest).encode() + b" " * (1 << 20)
    filesystem(s3_url).pipe_file(f"{s3_url}/manifest.json"[5:], padded)
    message = r"manifest\.json: is [\d,]+ bytes; allowed: a manifest of at most 1 MiB"
    with pytest.raises(StoreError, match=message) as info:
        open_store(s3_url)
    assert s3_url in str(info.value)
    folder = RemoteFolder(s3_url)
    with pytest.raises(StoreError, match=message):
        folder.manifest()
    assert folder.traffic.bytes < 1 << 16  # the listing only: the manifest was not fetched
