"""Audio windows (issue 12 item 2): log-mel columns aligned with a window's frames by pts.

Pure parts first (column times, the filterbank, the spectrum of a known beep), then real
videos with a 1 kHz beep at known times, stored with ``--audio``, served by the dataset at
stride 1 and 2 and from a variable-frame-rate source."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from _media import beep_samples, make_beep_video, make_vfr_beep_video, write_video
from hyperframes._core._errors import ConfigError, DataError
from hyperframes.data import HyperframeDataset, loader
from hyperframes.data._audio import (
    LogMelOptions,
    column_times,
    frame_intervals,
    logmel_columns,
    mel_filterbank,
    resolve_audio,
)

BEEP = (0.50, 0.60)
DB = 10 / math.log(10)  # natural-log power -> dB


def band_of(freq: float, opts: LogMelOptions, rate: int) -> int:
    fb = mel_filterbank(opts.n_mels, opts.n_fft(rate), rate)
    return int(fb[round(freq * opts.n_fft(rate) / rate)].argmax())


# -- pure ----------------------------------------------------------------------------------


def test_column_times_follow_pts_stride_and_vfr():
    # constant rate: k columns evenly inside each frame's interval
    got = column_times([0.0, 0.1, 0.2], 10.0, 2)
    np.testing.assert_allclose(got, [0.025, 0.075, 0.125, 0.175, 0.225, 0.275])
    # variable steps: each frame's columns span its own interval; the last lasts as the step
    _, dur = frame_intervals([0.0, 0.04, 0.12], 25.0)
    np.testing.assert_allclose(dur, [0.04, 0.08, 0.08])
    np.testing.assert_allclose(column_times([0.0, 0.04, 0.12], 25.0, 1), [0.02, 0.08, 0.16])
    # one frame, or repeated frames: one frame period
    np.testing.assert_allclose(frame_intervals([1.0], 20.0)[1], [0.05])
    np.testing.assert_allclose(frame_intervals([1.0, 1.0, 1.1], 20.0)[1], [0.05, 0.1, 0.1])


def test_audio_options_resolve_and_refuse():
    assert resolve_audio(None) is None
    assert resolve_audio("logmel") == LogMelOptions()
    o = resolve_audio({"n_mels": 32, "window_ms": 20, "columns_per_frame": 2})
    assert (o.n_mels, o.window_ms, o.columns_per_frame) == (32, 20, 2)
    with pytest.raises(ConfigError, match="unknown keys \\['mels'\\]"):
        resolve_audio({"mels": 32})
    with pytest.raises(ConfigError, match="n_mels"):
        resolve_audio({"n_mels": 0})
    with pytest.raises(ConfigError, match="allowed: None, 'logmel'"):
        resolve_audio("mfcc")


def test_filterbank_triangles_cover_the_band_in_mel_order():
    fb = mel_filterbank(40, 512, 16000)
    assert fb.shape == (257, 40) and float(fb.max()) <= 1.0 + 1e-6
    peaks = fb.argmax(0)
    assert bool((peaks[1:] >= peaks[:-1]).all())  # bands rise with frequency
    assert band_of(1000.0, LogMelOptions(n_mels=40), 16000) == int(fb[32].argmax())


def test_logmel_columns_find_a_beep_at_its_time():
    rate, opts = 16000, LogMelOptions()
    x = beep_samples(1.0, rate, [BEEP])
    times = np.arange(0.0125, 1.0, 0.025)  # 40 columns per second
    spec = logmel_columns(x[None], rate, 0.0, times, opts)
    assert spec.shape == (64, len(times)) and spec.dtype == torch.float32
    band = spec[band_of(1000.0, opts, rate)]
    inside = (times > BEEP[0] + 0.0125) & (times < BEEP[1] - 0.0125)
    outside = (times < BEEP[0] - 0.03) | (times > BEEP[1] + 0.03)
    assert (
        float(band[torch.from_numpy(inside)].min() - band[torch.from_numpy(outside)].max()) * DB
        > 40
    )
    # the same samples given as starting later shift the beep by that much
    later = logmel_columns(x[None], rate, 0.25, times + 0.25, opts)
    torch.testing.assert_close(later, spec)


# -- stores with audio -----------------------------------------------------------------------


def build(tmp_path, videos: dict, **options):
    from hyperframes.build import BuildOptions, build_store

    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    for name, make in videos.items():
        make(src / name)
    out = tmp_path / "store"
    build_store(src, out, BuildOptions(size="none", audio=True, **options), progress=False)
    return out


@pytest.fixture(scope="module")
def beep_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("beep")
    return build(
        tmp,
        {
            "beep.mkv": lambda p: make_beep_video(p, seconds=1.2, fps=25, beeps=[BEEP]),
            "vfr.mkv": lambda p: make_vfr_beep_video(p, seconds=1.2, beeps=[BEEP]),
            "silent.mp4": lambda p: write_video(p, frames=30, fps=25),
        },
    )


def _video(ds, name: str) -> int:
    return next(i for i, p in enumerate(ds.store.videos.paths) if p.endswith(name))


def _beep_columns(sample, opts: LogMelOptions, rate: int = 16000):
    """The band of 1 kHz over the sample's columns and the column times (by pts)."""
    band = sample.audio[band_of(1000.0, opts, rate)]
    times = column_times(sample.meta["pts_seconds"], sample.meta["fps"], opts.columns_per_frame)
    return band, times


def _check_alignment(sample, opts: LogMelOptions):
    band, times = _beep_columns(sample, opts)
    assert band.shape == (len(times),)
    peak = int(band.argmax())
    assert BEEP[0] - 0.02 <= times[peak] <= BEEP[1] + 0.02
    # loud on the columns of the beep (± one column), > 20 dB quieter elsewhere
    near = (times >= BEEP[0] - 0.03) & (times <= BEEP[1] + 0.03)
    quiet = band[torch.from_numpy(~near)]
    assert float(band.max() - quiet.max()) * DB > 20
    inside = (times > BEEP[0] + 0.015) & (times < BEEP[1] - 0.015)
    assert float(band[torch.from_numpy(inside)].min() - quiet.max()) * DB > 20
    # columns j*k..j*k+k-1 belong to frame j: the loud columns lie in the frames shown then
    k = opts.columns_per_frame
    pts = sample.meta["pts_seconds"]
    loud_frames = {int(c) // k for c in np.flatnonzero(band.numpy() > float(quiet.max()) + 20 / DB)}
    for j in loud_frames:
        end = pts[j + 1] if j + 1 < len(pts) else pts[j] + (pts[j] - pts[j - 1])
        assert pts[j] - 0.03 < BEEP[1] and end + 0.03 > BEEP[0], (j, pts[j], end)


@pytest.mark.parametrize("stride", [1, 2])
def test_beep_lands_in_the_columns_of_its_time(beep_store, stride):
    opts = LogMelOptions(columns_per_frame=4)
    frames = 12 if stride == 1 else 8
    ds = HyperframeDataset(
        beep_store,
        "uniform",
        frames=frames,
        audio="logmel",
        sampler_options={"clips": 1, "stride": stride},
        video_ids=[0],
    )
    assert ds.store.videos.paths[0].endswith("beep.mkv")
    s = ds[0]
    t0, t1 = s.meta["pts_seconds"][0], s.meta["pts_seconds"][-1]
    assert t0 < BEEP[0] and t1 > BEEP[1], "the window should contain the beep"
    assert s.audio.shape == (64, frames * 4) and s.audio.dtype == torch.float32
    assert s.audio_mask.tolist() == [True] * frames
    if stride == 2:
        assert set(np.diff(s.meta["stored_indices"]).tolist()) == {2}
    _check_alignment(s, opts)


def test_beep_alignment_holds_on_a_variable_rate_source(beep_store):
    ds = HyperframeDataset(
        beep_store,
        "uniform",
        frames=12,
        audio={"columns_per_frame": 2},
        sampler_options={"clips": 1},
    )
    v = _video(ds, "vfr.mkv")
    item = next(i for i in range(len(ds)) if ds.plan(i).video == v)
    s = ds[item]
    steps = np.round(np.diff(s.meta["pts_seconds"]), 3)
    assert len(set(steps.tolist())) > 1, "the source should have variable frame durations"
    assert s.meta["pts_seconds"][0] < BEEP[0] and s.meta["pts_seconds"][-1] > BEEP[1]
    assert s.audio.shape == (64, 24)
    _check_alignment(s, LogMelOptions(columns_per_frame=2))


def test_missing_audio_gives_zeros_or_an_error(beep_store):
    ds = HyperframeDataset(beep_store, "uniform", frames=4, audio="logmel")
    v = _video(ds, "silent.mp4")
    item = next(i for i in range(len(ds)) if ds.plan(i).video == v)
    s = ds[item]
    assert s.audio.shape == (64, 16) and not s.audio.any()
    assert s.audio_mask.tolist() == [False] * 4
    strict = HyperframeDataset(
        beep_store, "uniform", frames=4, audio="logmel", audio_missing="error"
    )
    with pytest.raises(DataError, match=r"silent\.mp4"):
        strict[item]
    with pytest.raises(ConfigError, match="audio_missing"):
        HyperframeDataset(beep_store, frames=4, audio="logmel", audio_missing="skip")


def test_padded_frames_have_no_audio(beep_store):
    ds = HyperframeDataset(
        beep_store,
        "uniform",
        frames=40,
        audio="logmel",
        sampler_options={"clips": 1, "short": "pad"},
        video_ids=[0],
    )
    s = ds[0]
    assert (s.audio_mask == s.mask).all() and not bool(s.mask.all())
    pad = torch.from_numpy(np.repeat(~s.mask.numpy(), 4))
    assert not s.audio[:, pad].any() and s.audio[:, ~pad].abs().sum() > 0


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_batches_carry_audio_alike_in_every_worker_mode(beep_store, mode):
    ds = HyperframeDataset(beep_store, "uniform", frames=6, audio="logmel")
    ref = [ds[i] for i in range(len(ds))]
    dl = loader(ds, batch_size=2, shuffle=False, workers=2, mode=mode)
    got = list(dl)
    audio = torch.cat([b.audio for b in got])
    assert audio.shape == (len(ds), 64, 24)
    torch.testing.assert_close(audio, torch.stack([s.audio for s in ref]), rtol=0, atol=0)
    assert torch.equal(
        torch.cat([b.audio_mask for b in got]), torch.stack([s.audio_mask for s in ref])
    )
    assert "audio=(2, 64, 24)" in repr(got[0])


def test_an_hdf5_copy_serves_the_same_audio(beep_store, tmp_path):
    from hyperframes.build import convert_to_hdf5

    h5 = tmp_path / "beep.h5"
    convert_to_hdf5(beep_store, h5, progress=False)
    a = HyperframeDataset(beep_store, "uniform", frames=6, audio="logmel")
    b = HyperframeDataset(h5, "uniform", frames=6, audio="logmel")
    assert len(a) == len(b)
    for i in range(len(a)):
        sa, sb = a[i], b[i]
        assert torch.equal(sa.audio, sb.audio) and torch.equal(sa.audio_mask, sb.audio_mask)
    got = list(loader(b, batch_size=2, shuffle=False, workers=2, mode="processes"))
    assert torch.equal(
        torch.cat([x.audio for x in got]), torch.stack([a[i].audio for i in range(len(a))])
    )
