"""The store's write side: the typed manifest (``store.Manifest``) the build writes and every
reader checks, and the typed messages build workers send."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from _media import write_video
from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store, convert_codec
from hyperframes.build._messages import Done, Failed, Fatal, Frames, Start
from hyperframes.build._options import CODEC_OPTIONS, make_codec
from hyperframes.build._workers import InProcess, ProcessPool, Worker
from hyperframes.inputs._scan import scan_inputs
from hyperframes.store import Manifest, codec_parameters, create_codec, list_codecs, open_store
from hyperframes.store.format import READABLE_VERSIONS

GOLDEN = Path(__file__).parent / "data"


def _edited(store: Path, tmp_path: Path, **changes) -> Path:
    copy = Path(shutil.copytree(store, tmp_path / "store"))
    m = json.loads((copy / "manifest.json").read_text())
    m.update(changes)
    (copy / "manifest.json").write_text(json.dumps(m))
    return copy


def test_a_built_stores_manifest_round_trips_through_the_model_byte_for_byte(tiny_motion_store):
    path = tiny_motion_store / "manifest.json"
    text = path.read_text()
    model = Manifest.read(path)
    assert model.num_videos == 9 and model.codec.name == "raw" and model.index[0].checksum
    assert json.dumps(model.to_json(), indent=1) + "\n" == text


@pytest.mark.parametrize("name", ["store_v1_raw", "store_v1_lz4"])
def test_stores_written_before_the_model_read_through_it_unchanged(name):
    path = GOLDEN / name / "manifest.json"
    model = Manifest.read(path)
    assert model.format_version == 1
    assert model.to_json() == json.loads(path.read_text())


def test_an_unknown_manifest_version_is_refused_naming_the_file_and_the_versions_read(
    tiny_motion_store, tmp_path
):
    copy = _edited(tiny_motion_store, tmp_path, format_version=99)
    known = ", ".join(map(str, READABLE_VERSIONS))
    with pytest.raises(StoreError) as e:
        Manifest.read(copy / "manifest.json")
    assert str(copy / "manifest.json") in str(e.value)
    assert "version 99 is not readable" in str(e.value) and f"reads versions {known}" in str(
        e.value
    )
    with pytest.raises(StoreError, match="version 99"):
        open_store(copy)


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("num_videos", "9", r"'num_videos' is '9', expected an integer"),
        ("classes", ["left", 3], r"'classes\.1' is 3, expected a string"),
        ("created", 20261204, r"'created' is 20261204, expected a string"),
        ("normalize", {"mean": [0.5]}, r"'normalize\.std' is missing"),
    ],
)
def test_a_manifest_with_a_wrong_field_type_is_refused(
    tiny_motion_store, tmp_path, key, value, said
):
    copy = _edited(tiny_motion_store, tmp_path, **{key: value})
    with pytest.raises(StoreError, match=said) as e:
        Manifest.read(copy / "manifest.json")
    assert str(copy / "manifest.json") in str(e.value)
    with pytest.raises(StoreError, match=said):
        open_store(copy)


def test_keys_the_model_does_not_know_are_kept(tiny_motion_store, tmp_path):
    copy = _edited(tiny_motion_store, tmp_path, written_by_a_later_version={"x": [1, 2]})
    assert Manifest.read(copy / "manifest.json").to_json()["written_by_a_later_version"] == {
        "x": [1, 2]
    }
    open_store(copy).close()


# -- worker messages -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_inputs(tmp_path_factory) -> list:
    """A real 6-frame video and a file that is no video, as the build's sources."""
    root = tmp_path_factory.mktemp("messages") / "data"
    write_video(root / "a" / "good.mp4", frames=6, width=32, height=24)
    (root / "a" / "broken.mp4").write_bytes(b"\x00not a video\x00" * 64)
    sources = sorted(scan_inputs(root).sources, key=lambda s: "broken" in s.path)
    assert [Path(s.path).name for s in sources] == ["good.mp4", "broken.mp4"]
    return sources


def _store(tmp_path: Path) -> Path:
    (tmp_path / "store" / "shards").mkdir(parents=True)
    return tmp_path / "store"


def test_a_worker_says_start_frames_done_and_failed(two_inputs, tmp_path):
    said: list = []
    w = Worker(_store(tmp_path), BuildOptions(size="none"), 0, 7, said.append, lambda: True)
    for i, source in enumerate(two_inputs):
        w.process(i, source)
    w.close()
    assert said[0] == Start(7, 0) and said[-2] == Start(7, 1)
    frames = [m for m in said[1:-3] if isinstance(m, Frames)]
    assert frames and sum(m.count for m in frames) == 6
    done = said[-3]
    assert isinstance(done, Done) and (done.worker, done.item, done.num_frames) == (7, 0, 6)
    assert done.nbytes == 6 * 3 * 24 * 32  # raw: the frames themselves
    failed = said[-1]
    assert isinstance(failed, Failed) and (failed.worker, failed.item) == (7, 1)
    assert failed.error.startswith("InputError: ") and "cannot be opened as a video" in failed.error
    for m in said:  # they cross process and Ray boundaries by pickle
        assert pickle.loads(pickle.dumps(m)) == m


def test_an_engine_passes_on_frames_done_and_failed_only(two_inputs, tmp_path):
    """(The process pool is run by test_store_build and test_store_crash, the Ray pool by
    test_build_ray: each hands ``handle`` the same typed messages.)"""
    seen: list = []
    InProcess(
        _store(tmp_path), BuildOptions(size="none"), 0, two_inputs, range(2), seen.append
    ).execute()
    assert {type(m) for m in seen} == {Frames, Done, Failed}  # no Start
    assert [(type(m).__name__, m.item) for m in seen if isinstance(m, Done | Failed)] == [
        ("Done", 0),
        ("Failed", 1),
    ]


def test_a_fatal_from_a_worker_process_stops_the_build_with_its_text(two_inputs, tmp_path):
    """One shape of Fatal whoever says it: here a worker process whose shard folder is gone."""
    pool = ProcessPool(
        tmp_path / "nowhere", BuildOptions(size="none"), 0, two_inputs, range(1), print, 1
    )
    with pytest.raises(StoreError, match=r"nowhere") as e:
        pool.execute()
    assert "Traceback" not in str(e.value)
    assert Fatal("x") == Fatal("x", None) and Fatal("x", 3).worker == 3
    with pytest.raises(StoreError, match=r"^the disk is full$"):
        InProcess(tmp_path, BuildOptions(), 0, [], [], print).report(Fatal("the disk is full", 0))


# -- codecs carry their parameters -------------------------------------------------------
@pytest.mark.parametrize("name", list_codecs())
def test_a_codecs_manifest_entry_makes_the_same_codec_again(name):
    """What the manifest records of a codec (``Codec.params``) is what it is made from."""
    options = BuildOptions(codec=name, jpeg_quality=77, chunk_frames=3)
    codec = make_codec(options)
    entry = Manifest.model_fields["codec"].annotation
    assert entry.model_validate({"name": name, **codec.params}).name == name  # typed
    assert create_codec(name, **codec.params).params == codec.params
    assert set(codec.params) >= set(codec_parameters(name))  # every parameter it takes
    recorded = {o for o, p in CODEC_OPTIONS.items() if p in codec_parameters(name)}
    assert recorded == set(options.content()) & set(CODEC_OPTIONS)


def test_a_zstd_store_records_its_level_and_a_conversion_its_quality(two_inputs, tmp_path):
    """The manifest says every parameter the frames were written with: zstd's level (it did
    not), and after convert --codec jpeg the build options say its quality (they did not)."""
    folder = Path(two_inputs[0].path).parent
    store = tmp_path / "z"
    build_store(folder, store, BuildOptions(size="none", codec="zstd"), progress=False)
    m = Manifest.read(store / "manifest.json")
    assert m.codec.model_dump(exclude_none=True) == {"name": "zstd", "chunk_frames": 4, "level": 3}
    out = convert_codec(store, tmp_path / "j", "jpeg", jpeg_quality=81, progress=False)
    m = Manifest.read(out / "manifest.json")
    assert m.codec.quality == 81 and m.build["codec"] == "jpeg" and m.build["jpeg_quality"] == 81
    assert "chunk_frames" not in m.build
