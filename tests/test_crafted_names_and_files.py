"""Crafted inputs end in a clean error naming the file, and names print safely: JSON nested too
deep for Python's parser in annotations and a saved dataset, HDF5 stores whose metadata is
damaged, and file names holding ESC sequences and newlines in ``build`` and ``info``."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from _media import write_video
from hyperframes._core._errors import InputError, StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.cli import main
from hyperframes.inputs import scan_inputs
from hyperframes.store import describe_store, open_store, verify_store

DEEP = "[" * 100_000 + "]" * 100_000  # far past the parser's recursion limit


def test_deep_activitynet_json_is_an_input_error_naming_the_file(tmp_path):
    path = tmp_path / "activity_net.json"
    path.write_text('{"database": {"a": {"annotations": ' + DEEP + "}}}")
    with pytest.raises(InputError, match=re.escape(f"{path}: nests deeper than a JSON reader")):
        scan_inputs(path)


def test_deep_videofolder_metadata_is_an_input_error_naming_the_line(tmp_path):
    write_video(tmp_path / "a.mp4", frames=2)
    first = json.dumps({"file_name": "a.mp4"})
    (tmp_path / "metadata.jsonl").write_text(f'{first}\n{{"file_name": "a.mp4", "x": {DEEP}}}\n')
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'metadata.jsonl'}:2: nests")):
        scan_inputs(tmp_path)


def test_deep_saved_dataset_info_is_an_input_error_naming_the_file(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the hf extra (datasets) is not installed")
    feats = datasets.Features({"video": datasets.Value("string")})
    saved = tmp_path / "saved"
    datasets.Dataset.from_dict({"video": ["a.mp4"]}, features=feats).save_to_disk(str(saved))
    (saved / "dataset_info.json").write_text('{"features": ' + DEEP + "}")
    with pytest.raises(InputError, match=re.escape(f"{saved / 'dataset_info.json'}: nests")):
        scan_inputs(saved)


@pytest.fixture(scope="module")
def h5_file(class_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("h5meta")
    build_store(class_folder, out / "s", BuildOptions(size="16"), progress=False)
    convert_to_hdf5(out / "s", out / "s.h5", compression="none", progress=False)
    return out / "s.h5"


def test_damaged_hdf5_metadata_is_a_store_error_naming_the_file(h5_file, tmp_path, capsys):
    """Each metadata structure of the file damaged in turn (its signature overwritten: B-trees,
    heaps and object headers, in the checksummed v110 layout the writer uses and the old one):
    open, verify and info end in a StoreError (or a problem) naming the file, never h5py's own
    RuntimeError / OSError."""
    raw = h5_file.read_bytes()
    signatures = (b"TREE", b"HEAP", b"OHDR", b"BTHD", b"BTLF", b"FRHP", b"FHDB", b"SNOD")
    spots = [m.start() for sig in signatures for m in re.finditer(sig, raw)]
    assert len(spots) >= 4
    bad = tmp_path / "bad.h5"
    refused = 0
    for at in spots:
        bad.write_bytes(raw[:at] + b"XXXX" + raw[at + 4 :])
        for call in (open_store, lambda p: describe_store(open_store(p))):
            try:
                call(bad)
            except StoreError as e:
                assert str(bad) in str(e)
                refused += 1
        assert all(str(bad) in p for p in verify_store(bad))
        assert main(["info", str(bad)]) in (0, 1)
        assert "Traceback" not in capsys.readouterr().err
    assert refused


def _rename(src, name: str):
    dst = src.with_name(name)
    os.rename(src, dst)
    return dst


def test_names_with_escapes_and_newlines_print_escaped_in_build_and_info(tmp_path, capsys):
    data = tmp_path / "data" / "cats"
    data.mkdir(parents=True)
    _rename(write_video(data / "a.mp4", frames=4), "ok\x1b]2;owned\x07\nfailed: 0.mp4")
    (data / "bad\x1b[2J\ndamaged (stored, the decoder reported errors): 0.mp4").write_text("no")
    shutil.copy(data.parent / "cats" / "ok\x1b]2;owned\x07\nfailed: 0.mp4", data / "plain.mp4")
    out = tmp_path / "store"
    assert main(["build", str(data.parent), "--out", str(out), "--size", "16", "--quiet"]) == 2
    built = capsys.readouterr().out
    assert "\x1b" not in built
    lines = built.splitlines()
    assert [x for x in lines if x.startswith("damaged")] == [
        "damaged (stored, the decoder reported errors): 0"
    ]  # one, the summary's own: the name's newline is written \n
    assert "bad\\x1b[2J\\ndamaged (stored, the decoder reported errors): 0.mp4" in built

    assert main(["info", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "ok\\x1b]2;owned\\x07\\nfailed: 0.mp4" in shown
    assert len([x for x in shown.splitlines() if x.startswith("failed")]) == 1
