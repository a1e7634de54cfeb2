"""Real datasets in: each annotation format read from a small dataset laid out the way the
dataset ships, with labels, class ids and splits checked, every row accounted for, and the
ids carried into a built store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _media import write_video
from hyperframes import ConfigError, InputError
from hyperframes.build import BuildOptions, build_store
from hyperframes.inputs._formats import (
    detect_input_format,
    list_input_formats,
)
from hyperframes.inputs._scan import scan, scan_inputs
from hyperframes.inputs._sources import Segment, Source, class_names
from hyperframes.store import open_store


def _video(path: Path) -> Path:
    return write_video(path, frames=4, width=32, height=24)


def _build(data, out, **kw):
    return build_store(data, out, BuildOptions(size="none"), progress=False, **kw)


def _rows(inputs) -> int:
    return len(inputs.sources) + len(inputs.failed_rows) + len(inputs.skipped)


def _by_name(inputs) -> dict[str, Source]:
    return {Path(s.path).name: s for s in inputs.sources}


# --- datasets laid out as they ship -------------------------------------------------------


def ucf101(tmp: Path) -> Path:
    """ucfTrainTestlist/ beside UCF-101/, CRLF lines, classInd numbered from 1."""
    lists = tmp / "UCF101" / "ucfTrainTestlist"
    lists.mkdir(parents=True)
    videos = tmp / "UCF101" / "UCF-101"
    classes = ["ApplyEyeMakeup", "Archery", "YoYo"]
    (lists / "classInd.txt").write_bytes(
        "".join(f"{i} {c}\r\n" for i, c in enumerate(classes, 1)).encode()
    )
    train, test = [], []
    for c in classes:
        for g, dest in ((1, train), (8, test)):
            rel = f"{c}/v_{c}_g{g:02d}_c01.avi"
            _video(videos / rel)
            dest.append(rel)
    label = {c: i for i, c in enumerate(classes, 1)}
    (lists / "trainlist01.txt").write_bytes(
        "".join(f"{r} {label[r.split('/')[0]]}\r\n" for r in train).encode()
    )
    (lists / "testlist01.txt").write_bytes("".join(f"{r}\r\n" for r in test).encode())
    return lists


def hmdb51(tmp: Path) -> Path:
    splits = tmp / "testTrainMulti_7030_splits"
    splits.mkdir(parents=True)
    marks = {"brush_hair": ["1", "2", "0"], "wave": ["2", "1", "1"]}
    for cls, ms in marks.items():
        lines = []
        for i, m in enumerate(ms):
            name = f"{cls} clip_{i}.avi"  # spaces: HMDB names can hold them
            _video(tmp / "hmdb51_org" / cls / name)
            lines.append(f"{name} {m} \n")
        (splits / f"{cls}_test_split1.txt").write_text("".join(lines))
        (splits / f"{cls}_test_split2.txt").write_text("".join(f"{cls} clip_0.avi 2 \n"))
    return splits


def kinetics(tmp: Path) -> Path:
    ann = tmp / "k400" / "annotations"
    ann.mkdir(parents=True)
    _video(tmp / "k400" / "train" / "abc_000004_000014.mp4")  # trimmed
    _video(tmp / "k400" / "train" / "-x_y-z.mp4")  # untrimmed: the row's range is a segment
    (ann / "train.csv").write_text(
        "label,youtube_id,time_start,time_end,split,is_cc\n"
        "zumba,abc,4,14,train,0\n"
        '"air drumming",-x_y-z,1,3,train,0\n'
        "abseiling,gone,0,10,train,0\n"
    )
    return ann / "train.csv"


def ssv2(tmp: Path) -> Path:
    ann = tmp / "labels"
    ann.mkdir(parents=True)
    (ann / "something-something-v2-labels.json").write_text(
        json.dumps({"Pushing something from left to right": "1", "Holding something": "0"})
    )
    train = [
        {"id": "11", "label": "holding a cup", "template": "Holding [something]"},
        {
            "id": "12",
            "label": "pushing a pen",
            "template": "Pushing [something] from left to right",
        },
    ]
    (ann / "something-something-v2-train.json").write_text(json.dumps(train, indent=4))
    (ann / "something-something-v2-test.json").write_text(json.dumps([{"id": "13"}]))
    for i in (11, 12, 13):
        _video(tmp / "20bn-something-something-v2" / f"{i}.mp4")
    return ann


def charades(tmp: Path) -> Path:
    ann = tmp / "Charades"
    ann.mkdir(parents=True)
    (ann / "Charades_v1_classes.txt").write_text(
        "".join(f"c{i:03d} class {i}\n" for i in range(160))
    )
    (ann / "Charades_v1_train.csv").write_text(
        "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"
        '46GP8,HR43,Kitchen,6,7,Yes,"A person cooks, then eats.",food,x,'
        '"c092 11.90 21.20;c147 0.00 12.60",24.8\n'
        "N11GT,0KZ7,Stairs,6,7,Yes,script,stairs,x,,30.2\n"
    )
    for vid in ("46GP8", "N11GT"):
        _video(tmp / "Charades_v1_480" / f"{vid}.mp4")
    return ann / "Charades_v1_train.csv"


def activitynet(tmp: Path) -> Path:
    ann = tmp / "anet"
    ann.mkdir(parents=True)
    doc = {
        "version": "VERSION 1.3",
        "taxonomy": [
            {"nodeId": 0, "nodeName": "Root", "parentName": None, "parentId": None},
            {"nodeId": 1, "nodeName": "Sports", "parentName": "Root", "parentId": 0},
            {"nodeId": 2, "nodeName": "Zumba", "parentName": "Sports", "parentId": 1},
            {"nodeId": 3, "nodeName": "Ballet", "parentName": "Sports", "parentId": 1},
            {"nodeId": 4, "nodeName": "Archery", "parentName": "Sports", "parentId": 1},
        ],
        "database": {
            "QOlSCBRmfWY": {
                "subset": "training",
                "duration": 82.7,
                "annotations": [{"segment": [6.19, 77.2], "label": "Ballet"}],
            },
            "ehGHCYKzyZ8": {
                "subset": "validation",
                "duration": 40.0,
                "annotations": [
                    {"segment": [0.0, 10.5], "label": "Zumba"},
                    {"segment": [12.0, 30.0], "label": "Ballet"},
                ],
            },
            "nwznKOuZM7w": {"subset": "testing", "duration": 20.0, "annotations": []},
        },
    }
    (ann / "activity_net.v1-3.min.json").write_text(json.dumps(doc, indent=1))
    _video(ann / "videos" / "v_QOlSCBRmfWY.mp4")
    _video(ann / "videos" / "ehGHCYKzyZ8.mkv")  # named without the v_ prefix
    _video(ann / "videos" / "v_nwznKOuZM7w.mp4")
    return ann / "activity_net.v1-3.min.json"


def csv_list(tmp: Path) -> Path:
    _video(tmp / "d" / "my clips" / "walk 1.mp4")
    _video(tmp / "d" / "b.mp4")
    path = tmp / "d" / "train.csv"
    path.write_text("\ufeffpath,label,split\nmy clips/walk 1.mp4,10,train\nb.mp4,2,val\n")
    return path


def mmaction(tmp: Path) -> Path:
    _video(tmp / "d" / "my clips" / "walk 1.mp4")
    _video(tmp / "d" / "b.mp4")
    path = tmp / "d" / "train.txt"
    path.write_text("my clips/walk 1.mp4 10\n# a comment\n\nb.mp4 2\n")
    return path


def folder(tmp: Path) -> Path:
    _video(tmp / "d" / "cat" / "a.mp4")
    _video(tmp / "d" / "dog" / "b.mp4")
    return tmp / "d"


def videofolder(tmp: Path) -> Path:
    _video(tmp / "vf" / "train" / "a.mp4")
    (tmp / "vf" / "train" / "metadata.csv").write_text("file_name,label\na.mp4,cat\n")
    return tmp / "vf"


def hf_disk(tmp: Path) -> Path:
    datasets = pytest.importorskip("datasets", reason="the hf extra (datasets) is not installed")
    _video(tmp / "v.mp4")
    feats = datasets.Features(
        {"video": datasets.Value("string"), "label": datasets.ClassLabel(names=["x"])}
    )
    datasets.Dataset.from_dict({"video": ["v.mp4"], "label": [0]}, features=feats).save_to_disk(
        str(tmp / "saved")
    )
    return tmp / "saved"


# each dataset: how to lay it out, where its videos are relative to the tmp folder (None: the
# default root works) and how many rows (files for a folder) it has
LAYOUTS = {
    "folder": (folder, None, 2),
    "mmaction": (mmaction, None, 2),
    "csv": (csv_list, None, 2),
    "ucf101": (ucf101, "UCF101/UCF-101", 6),
    "hmdb51": (hmdb51, "hmdb51_org", 6),
    "kinetics": (kinetics, "k400", 3),
    "ssv2": (ssv2, "20bn-something-something-v2", 3),
    "charades": (charades, "Charades_v1_480", 2),
    "activitynet": (activitynet, None, 3),
    "videofolder": (videofolder, None, 1),
    "hf_disk": (hf_disk, ".", 1),  # its path is relative to the tmp folder, the saved one's parent
}


def _layout(name: str, tmp: Path):
    make, root, _ = LAYOUTS[name]
    return make(tmp), (None if root is None else tmp / root)


def test_every_registered_format_has_a_dataset_here():
    assert list(LAYOUTS) == list_input_formats()


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_each_format_is_detected_and_reads_every_row(name, tmp_path):
    data, root = _layout(name, tmp_path)
    assert detect_input_format(data) == name
    inputs = scan_inputs(data, root=root)
    assert inputs.input_format == name
    assert _rows(inputs) == LAYOUTS[name][2]  # every row stored, failed or skipped
    assert inputs.sources and all(Path(s.path).is_absolute() for s in inputs.sources)
    assert class_names(inputs.sources, inputs.classes) == inputs.classes
    if name != "folder":  # every listed source says where it was listed: "file:line"
        assert all(s.row.rsplit(":", 1)[1].isdigit() for s in inputs.sources)


def test_detection_reads_a_dataset_folder_as_its_format(tmp_path):
    assert detect_input_format(ucf101(tmp_path / "u")) == "ucf101"
    assert detect_input_format(hmdb51(tmp_path / "h")) == "hmdb51"
    assert detect_input_format(ssv2(tmp_path / "s")) == "ssv2"
    assert detect_input_format(kinetics(tmp_path / "k").parent) == "kinetics"
    assert detect_input_format(charades(tmp_path / "c").parent) == "charades"
    assert detect_input_format(ucf101(tmp_path / "x") / "testlist01.txt") == "ucf101"


def test_ambiguous_data_asks_for_input_format(tmp_path):
    lists = ucf101(tmp_path)
    (lists / "brush_hair_test_split1.txt").write_text("x.avi 1\n")
    with pytest.raises(
        InputError, match=r"could be read as ucf101 or hmdb51; pass input_format ucf101"
    ):
        scan_inputs(lists)
    assert scan_inputs(lists, input_format="ucf101", root=tmp_path / "UCF101" / "UCF-101")


def test_unknown_input_format_lists_the_known_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown input format 'ucf'; known: folder, mmaction"):
        scan_inputs(folder(tmp_path), input_format="ucf")
    notes = tmp_path / "notes.json"
    notes.write_text('{"a": 1}')
    with pytest.raises(InputError, match=r"notes\.json: cannot tell its input format .* ucf101"):
        scan_inputs(notes)


# --- csv ------------------------------------------------------------------------------------


def test_csv_header_is_honoured_and_integer_labels_keep_their_ids(tmp_path):
    data = csv_list(tmp_path)
    inputs = scan_inputs(data)
    s = _by_name(inputs)
    assert (s["walk 1.mp4"].label, s["walk 1.mp4"].split) == ("10", "train")
    assert (s["b.mp4"].label, s["b.mp4"].split) == ("2", "val")
    assert s["b.mp4"].row == f"{data}:3"
    assert inputs.classes == [str(i) for i in range(11)]  # no phantom 'label' class
    report = _build(data, tmp_path / "store")
    assert report.exit_code == 0, report.failed
    store = open_store(tmp_path / "store")
    assert [(v.label, v.label_id, v.split) for v in store.videos] == [
        ("10", 10, "train"),
        ("2", 2, "val"),
    ]


def test_csv_segments_of_one_file_are_one_source(tmp_path):
    _video(tmp_path / "long.mp4")
    data = tmp_path / "clips.csv"
    data.write_text(
        "split,end,path,start,label,notes\n"
        "train,5,long.mp4,0,run,x\n"
        "train,0:09,long.mp4,0:05,jump,y\n"
    )
    (source,) = scan_inputs(data).sources
    assert source.segments == (Segment(0, 5, ("run",)), Segment(5, 9, ("jump",)))
    assert (source.label, source.labels) == (None, ("run", "jump"))


def test_csv_without_a_header_says_to_add_one(tmp_path):
    data = tmp_path / "l.csv"
    data.write_text("a.mp4,walk\n")
    with pytest.raises(InputError, match=r"l\.csv:1: expected a header naming the columns"):
        scan_inputs(data)
    data.write_text("path,lable\na.mp4,walk\n")
    with pytest.raises(InputError, match=r"no 'label' column \(columns: path,lable\)"):
        scan_inputs(data)


def test_csv_bad_times_are_failed_rows_naming_the_line(tmp_path):
    for name in ("a.mp4", "b.mp4", "c.mp4"):
        _video(tmp_path / name)
    data = tmp_path / "l.csv"
    data.write_text("path,label,start,end\na.mp4,x,0,1\nb.mp4,x,2,1\nc.mp4,x,soon,3\n")
    inputs = scan_inputs(data)
    assert [Path(s.path).name for s in inputs.sources] == ["a.mp4"]
    failed = {Path(f["path"]).name: f["error"] for f in inputs.failed_rows}
    assert failed["b.mp4"] == f"InputError: segment end 1 s <= start 2 s (at {data}:3)"
    assert "unparsable start time 'soon'" in failed["c.mp4"] and f"{data}:4" in failed["c.mp4"]
    report = _build(data, tmp_path / "store")
    assert report.exit_code == 2 and len(report.failed) == 2 and report.videos == 1


# --- mmaction -------------------------------------------------------------------------------


def test_mmaction_paths_with_spaces_and_rawframes(tmp_path):
    data = mmaction(tmp_path)
    inputs = scan_inputs(data)
    assert [(Path(s.path).name, s.label, s.row) for s in inputs.sources] == [
        ("walk 1.mp4", "10", f"{data}:1"),
        ("b.mp4", "2", f"{data}:4"),
    ]
    assert inputs.classes == [str(i) for i in range(11)]
    frames = tmp_path / "rf" / "v 1"
    frames.mkdir(parents=True)
    (frames / "img_00001.jpg").write_bytes(b"")
    lst = tmp_path / "rf" / "list.txt"
    lst.write_text("v 1 3 0\n")
    (s,) = scan_inputs(lst).sources
    assert (Path(s.path).name, s.kind, s.label) == ("v 1", "frames", "0")


def test_a_missing_file_fails_naming_its_row(tmp_path):
    data = mmaction(tmp_path)
    data.write_text(data.read_text() + "gone.mp4 1\n")
    report = _build(data, tmp_path / "store")
    assert report.exit_code == 2 and report.videos == 2
    (failed,) = report.failed
    assert failed["error"].endswith(f"gone.mp4: no such file (listed at {data}:5)")


def test_a_file_listed_twice_is_skipped_or_an_error(tmp_path):
    _video(tmp_path / "a.mp4")
    data = tmp_path / "l.txt"
    data.write_text("a.mp4 1\na.mp4 1\n")
    inputs = scan_inputs(data)
    assert len(inputs.sources) == 1
    assert inputs.skipped == [
        {"path": str(tmp_path / "a.mp4"), "reason": f"listed again at {data}:2 (first at {data}:1)"}
    ]
    data.write_text("a.mp4 1\na.mp4 2\n")
    with pytest.raises(InputError, match=r"l\.txt:2: .*a\.mp4 is listed again with another label"):
        scan_inputs(data)


# --- ucf101 ---------------------------------------------------------------------------------


def test_ucf101_keeps_classind_ids_and_reads_test_labels_from_folders(tmp_path):
    lists = ucf101(tmp_path)
    root = tmp_path / "UCF101" / "UCF-101"
    inputs = scan_inputs(lists, root=root)
    assert inputs.classes == ["ApplyEyeMakeup", "Archery", "YoYo"]  # classInd 1..3 -> ids 0..2
    assert [(s.label, s.split) for s in inputs.sources] == [
        ("ApplyEyeMakeup", "train"),
        ("Archery", "train"),
        ("YoYo", "train"),
        ("ApplyEyeMakeup", "test"),
        ("Archery", "test"),
        ("YoYo", "test"),
    ]
    assert _rows(inputs) == 6
    assert scan_inputs(lists / "testlist01.txt", root=root).classes == inputs.classes
    report = _build(lists / "trainlist01.txt", tmp_path / "store", root=root)
    assert report.exit_code == 0, report.failed
    store = open_store(tmp_path / "store")
    assert store.classes == ["ApplyEyeMakeup", "Archery", "YoYo"]
    assert [v.label_id for v in store.videos] == [0, 1, 2]


def test_ucf101_without_root_says_where_the_videos_are(tmp_path):
    lists = ucf101(tmp_path)
    with pytest.raises(InputError, match=r"none of the 6 listed files exists under .*pass root"):
        scan_inputs(lists)
    try:
        scan_inputs(lists)
    except InputError as e:
        assert str(e).endswith(f"pass root {tmp_path / 'UCF101' / 'UCF-101'}")


def test_ucf101_bad_labels_fail_their_rows_never_shift(tmp_path):
    lists = ucf101(tmp_path)
    root = tmp_path / "UCF101" / "UCF-101"
    with (lists / "trainlist01.txt").open("ab") as f:
        f.write(b"YoYo/v_YoYo_g02_c01.avi 4\r\nYoYo/v_YoYo_g03_c01.avi 1\r\n")
    with (lists / "testlist01.txt").open("ab") as f:
        f.write(b"Juggling/v_Juggling_g01_c01.avi\r\n")
    inputs = scan_inputs(lists, root=root)
    assert inputs.classes == ["ApplyEyeMakeup", "Archery", "YoYo"]
    errors = sorted(f["error"] for f in inputs.failed_rows)
    train, test = lists / "trainlist01.txt", lists / "testlist01.txt"
    assert errors == [
        f"InputError: class folder 'Juggling' is not in classInd.txt (a test list takes its "
        f"label from the folder name) (at {test}:4)",
        f"InputError: label 1 is 'ApplyEyeMakeup' in classInd.txt, but the class folder says "
        f"'YoYo' (at {train}:5)",
        f"InputError: label 4 is not in classInd's 1..3 (at {train}:4)",
    ]
    assert _rows(inputs) == 9


# --- hmdb51 ---------------------------------------------------------------------------------


def test_hmdb51_split_marks_become_splits_or_skipped_rows(tmp_path):
    splits = hmdb51(tmp_path)
    inputs = scan_inputs(splits, root=tmp_path / "hmdb51_org")
    assert inputs.classes == ["brush_hair", "wave"]
    assert [(Path(s.path).name, s.label, s.split) for s in inputs.sources] == [
        ("brush_hair clip_0.avi", "brush_hair", "train"),
        ("brush_hair clip_1.avi", "brush_hair", "test"),
        ("wave clip_0.avi", "wave", "test"),
        ("wave clip_1.avi", "wave", "train"),
        ("wave clip_2.avi", "wave", "train"),
    ]
    (skipped,) = inputs.skipped
    assert skipped["reason"] == (
        f"not in split 1 (marked 0) (at {splits / 'brush_hair_test_split1.txt'}:3)"
    )
    two = scan_inputs(splits / "wave_test_split2.txt", root=tmp_path / "hmdb51_org")
    assert [(s.label, s.split) for s in two.sources] == [("brush_hair", "test"), ("wave", "test")]


# --- kinetics -------------------------------------------------------------------------------


def test_kinetics_finds_trimmed_and_untrimmed_files(tmp_path):
    data = kinetics(tmp_path)
    inputs = scan_inputs(data, root=tmp_path / "k400")
    s = _by_name(inputs)
    assert (s["abc_000004_000014.mp4"].label, s["abc_000004_000014.mp4"].segments) == ("zumba", ())
    assert s["-x_y-z.mp4"].segments == (Segment(1.0, 3.0, ("air drumming",)),)
    assert s["gone_000000_000010.mp4"].row == f"{data}:4"  # not found: the build fails it
    assert inputs.classes == ["abseiling", "air drumming", "zumba"]
    assert {src.split for src in inputs.sources} == {"train"}
    report = _build(data, tmp_path / "store", root=tmp_path / "k400")
    assert report.videos == 2
    (failed,) = report.failed
    assert failed["error"].endswith(f"no such file (listed at {data}:4)")


def test_kinetics_bad_time_and_duplicate_id(tmp_path):
    data = kinetics(tmp_path)
    data.write_text(data.read_text() + "zumba,bad,4,x,train,0\n")
    inputs = scan_inputs(data, root=tmp_path / "k400")
    (failed,) = inputs.failed_rows
    assert "bad: unparsable end time 'x'" in failed["error"] and f"{data}:5" in failed["error"]
    data.write_text(data.read_text() + "zumba,abc,4,14,train,0\n")
    with pytest.raises(InputError, match=r"train\.csv:6: duplicate id abc 4\.\.14 .*:2\)"):
        scan_inputs(data, root=tmp_path / "k400")


# --- ssv2 -----------------------------------------------------------------------------------


def test_ssv2_keeps_the_labels_file_ids(tmp_path):
    ann = ssv2(tmp_path)
    root = tmp_path / "20bn-something-something-v2"
    inputs = scan_inputs(ann, root=root)
    assert inputs.classes == ["Holding something", "Pushing something from left to right"]
    assert [(Path(s.path).name, s.label, s.split) for s in inputs.sources] == [
        ("13.mp4", None, "test"),
        ("11.mp4", "Holding something", "train"),
        ("12.mp4", "Pushing something from left to right", "train"),
    ]
    train = ann / "something-something-v2-train.json"
    assert _by_name(inputs)["12.mp4"].row == f"{train}:7"  # the line its object starts on
    only = scan_inputs(train, root=root)
    assert len(only.sources) == 2 and only.classes == inputs.classes


def test_ssv2_unknown_template_fails_and_duplicate_id_is_an_error(tmp_path):
    ann = ssv2(tmp_path)
    root = tmp_path / "20bn-something-something-v2"
    train = ann / "something-something-v2-train.json"
    items = [*json.loads(train.read_text()), {"id": "14", "template": "Dropping [something]"}]
    train.write_text(json.dumps(items))
    (failed,) = scan_inputs(train, root=root).failed_rows
    assert (
        "id 14: class 'Dropping something' is not in something-something-v2-labels"
        in (failed["error"])
    )
    train.write_text(json.dumps([*items, {"id": "11", "template": "Holding [something]"}]))
    with pytest.raises(InputError, match=r"duplicate id 11 \(first at .*train\.json:1\)"):
        scan_inputs(train, root=root)


# --- charades -------------------------------------------------------------------------------


def test_charades_is_multi_label_with_segments(tmp_path):
    data = charades(tmp_path)
    inputs = scan_inputs(data, root=tmp_path / "Charades_v1_480")
    s = _by_name(inputs)
    cooks = s["46GP8.mp4"]
    assert (cooks.label, cooks.labels, cooks.split) == (None, ("c092", "c147"), "train")
    assert cooks.segments == (Segment(11.9, 21.2, ("c092",)), Segment(0.0, 12.6, ("c147",)))
    assert (s["N11GT.mp4"].labels, s["N11GT.mp4"].segments) == ((), ())
    assert inputs.classes[92] == "c092" and len(inputs.classes) == 160


def test_charades_bad_actions_fail_their_rows(tmp_path):
    data = charades(tmp_path)
    _video(tmp_path / "Charades_v1_480" / "BAD01.mp4")
    _video(tmp_path / "Charades_v1_480" / "BAD02.mp4")
    data.write_text(
        data.read_text()
        + 'BAD01,s,x,1,1,Yes,s,o,d,"c001 5.0 2.0",9\n'
        + 'BAD02,s,x,1,1,Yes,s,o,d,"c999 1.0 2.0",9\n'
    )
    inputs = scan_inputs(data, root=tmp_path / "Charades_v1_480")
    failed = {Path(f["path"]).name: f["error"] for f in inputs.failed_rows}
    assert (
        failed["BAD01.mp4"] == f"InputError: id BAD01: segment end 2 s <= start 5 s (at {data}:4)"
    )
    assert "class c999 is not in Charades_v1_classes.txt" in failed["BAD02.mp4"]
    (data.parent / "Charades_v1_classes.txt").unlink()  # then the codes' numbers are the ids
    inputs = scan_inputs(data, root=tmp_path / "Charades_v1_480")
    assert inputs.classes == [f"c{i:03d}" for i in range(1000)]


# --- activitynet ----------------------------------------------------------------------------


def test_activitynet_segments_labels_and_subsets(tmp_path):
    data = activitynet(tmp_path)
    inputs = scan_inputs(data)
    assert inputs.classes == ["Archery", "Ballet", "Zumba"]  # taxonomy leaves, sorted
    s = _by_name(inputs)
    one = s["v_QOlSCBRmfWY.mp4"]
    assert (one.label, one.labels, one.split) == ("Ballet", ("Ballet",), "training")
    assert one.segments == (Segment(6.19, 77.2, ("Ballet",)),)
    two = s["ehGHCYKzyZ8.mkv"]
    assert (two.label, two.labels, two.split) == (None, ("Zumba", "Ballet"), "validation")
    test = s["v_nwznKOuZM7w.mp4"]
    assert (test.label, test.segments, test.split) == (None, (), "testing")
    report = _build(data, tmp_path / "store")
    assert report.exit_code == 0, report.failed
    assert open_store(tmp_path / "store").classes == ["Archery", "Ballet", "Zumba"]


def test_activitynet_bad_segments_fail_and_duplicate_ids_are_errors(tmp_path):
    data = activitynet(tmp_path)
    doc = json.loads(data.read_text())
    doc["database"]["QOlSCBRmfWY"]["annotations"][0]["segment"] = [9.0, 9.0]
    doc["database"]["ehGHCYKzyZ8"]["annotations"][0]["label"] = "Polka"
    data.write_text(json.dumps(doc, indent=1))
    inputs = scan_inputs(data)
    errors = sorted(f["error"] for f in inputs.failed_rows)
    assert errors[0].startswith("InputError: video QOlSCBRmfWY: segment end 9 s <= start 9 s (at ")
    assert "video ehGHCYKzyZ8: label 'Polka' is not a class of the taxonomy" in errors[1]
    assert _rows(inputs) == 3
    text = data.read_text()
    data.write_text(text.replace('"nwznKOuZM7w"', '"QOlSCBRmfWY"'))
    with pytest.raises(InputError, match=r"key 'QOlSCBRmfWY' appears twice \(a duplicate id\)"):
        scan_inputs(data)


# --- the entry points stay as they were -----------------------------------------------------


def test_scan_keeps_its_shape_and_sources_their_defaults(tmp_path):
    data = folder(tmp_path)
    sources, skipped = scan(data)
    assert [(s.label, s.segments, s.labels, s.row) for s in sources] == [
        ("cat", (), None, None),
        ("dog", (), None, None),
    ]
    assert skipped == []
    with pytest.raises(InputError, match=r"^root .*: only annotation files list paths"):
        scan_inputs(data, root=tmp_path)
    with pytest.raises(InputError, match=r"segment 3..2 s: expected 0 <= start < end"):
        Segment(3, 2)


def test_cli_build_takes_input_format_and_root(tmp_path, capsys):
    from hyperframes.cli import main

    lists = ucf101(tmp_path)
    root = tmp_path / "UCF101" / "UCF-101"
    args = ["build", str(lists), "--out", str(tmp_path / "s"), "--size", "none", "--quiet"]
    given = ["--input-format", "ucf101", "--root", str(root)]
    assert main([*args, *given, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("6 videos")
    assert main([*args, *given]) == 0
    assert open_store(tmp_path / "s").classes == ["ApplyEyeMakeup", "Archery", "YoYo"]
    assert main([*args, "--input-format", "kinetics"]) == 1
    assert "expected a Kinetics CSV" in capsys.readouterr().err
