"""The journal record (``build._journal``): what a shard's journal says of a stored video, read
back exactly as it was written, older records read as before, damaged journals refused naming
the file, and a line torn by a crash dropped."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._journal import JournalError, JournalRecord, load_records
from hyperframes.build._shard import ShardWriter, read_journal, recover_all

OPTIONS = BuildOptions(size="16", workers=1)
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def store(class_folder, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("journal") / "store"
    build_store(class_folder, out, OPTIONS, progress=False)
    return out


def _journals(store: Path) -> list[Path]:
    return sorted((store / "shards").glob("*.jsonl"))


def test_every_line_a_build_wrote_reads_back_and_writes_the_same_line(store):
    for journal in _journals(store):
        lines = journal.read_text().splitlines()[:-1]  # the last: the shard's summary
        records, summary = load_records(journal.parent, journal.name[: -len(".jsonl")])
        assert "shard" in summary and len(records) == len(lines)
        for line, record in zip(lines, records):
            assert json.dumps(record.to_json(), separators=(",", ":")) == line
            again = JournalRecord.from_json(json.loads(line))
            assert again == record
            assert len(record.pts_seconds) == record.num_frames == len(record.change_score or ())
            assert record.payload_xxh3_64 is not None and record.tracks == {}


def test_a_record_of_an_older_build_reads_without_the_keys_it_lacks():
    journal = next((DATA / "store_v1_raw" / "shards").glob("*.jsonl"))
    line = read_journal(journal)[0]
    record = JournalRecord.from_json(line, where=str(journal))
    assert record.payload_xxh3_64 is None and record.decode_errors == 0
    assert record.signature is None and record.tracks == {}
    assert "payload_xxh3_64" not in record.to_json()
    # a track the build asked for is a key even where the video has none (no audio stream)
    with_audio = JournalRecord.from_json({**line, "audio": None})
    assert with_audio.tracks == {"audio": None} and with_audio.to_json()["audio"] is None


def test_a_record_checks_itself():
    line = read_journal(next((DATA / "store_v1_raw" / "shards").glob("*.jsonl")))[0]
    record = JournalRecord.from_json(line)
    with pytest.raises(ValueError, match="pts_seconds has 2 entries for 32 frames"):
        dataclasses.replace(record, pts_seconds=[0.0, 0.1])
    with pytest.raises(ValueError, match="unknown tracks"):
        dataclasses.replace(record, tracks={"depth": None})
    assert "32 frames" in repr(record) and "pts_seconds" not in repr(record)
    with pytest.raises(
        JournalError, match=r"j\.jsonl: line 2: not a journal record \(a JSON list\)"
    ):
        JournalRecord.from_json([1, 2], where="j.jsonl: line 2")  # type: ignore[arg-type]


def _copy(store: Path, tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "store"
    shutil.copytree(store, out)
    return out, _journals(out)[0]


def test_a_truncated_journal_is_refused_naming_it(store, class_folder, tmp_path):
    out, journal = _copy(store, tmp_path)
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) // 2])  # the summary line is gone
    with pytest.raises(ValueError, match=f"{journal.name} lack their summary line"):
        build_store(class_folder, out, OPTIONS, progress=False)


def test_a_flipped_byte_that_breaks_a_line_is_refused_naming_the_journal(
    store, class_folder, tmp_path
):
    out, journal = _copy(store, tmp_path)
    data = bytearray(journal.read_bytes())
    data[0] ^= 0x01  # '{' -> 'z': the first line is no JSON, nor is anything after it read
    journal.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{journal.name} lack their summary line"):
        build_store(class_folder, out, OPTIONS, progress=False)


def test_a_line_that_is_json_but_no_record_is_refused_naming_the_file_and_line(
    store, class_folder, tmp_path
):
    out, journal = _copy(store, tmp_path)
    text = journal.read_text()
    journal.write_text(text.replace('"shape"', '"shapf"', 1))  # one bit of a key flipped
    with pytest.raises(
        JournalError, match=rf"{journal}: line 1: not a journal record \(no shape\)"
    ):
        build_store(class_folder, out, OPTIONS, progress=False)
    assert issubclass(JournalError, StoreError)


def test_a_line_torn_by_a_crash_is_dropped_and_the_lines_before_it_kept(store, tmp_path):
    """The last line of a killed writer's journal, half written: recovery keeps the records
    whose line is whole (their payload was fsynced before), and the shard reads back."""
    records, _ = load_records(_journals(store)[0].parent, _journals(store)[0].name[:-6])
    shards = tmp_path / "shards"
    shards.mkdir()
    w = ShardWriter(shards, "r000-w000-00000")
    for r in records[:2]:
        sink = w.begin_video(_RawCodec())
        sink.add(np.zeros(r.nbytes, np.uint8))
        offset, nbytes, digest = sink.finish()
        again = dataclasses.replace(r, offset=offset, nbytes=nbytes, payload_xxh3_64=digest)
        w.commit(again.to_json())
    w.abandon()
    part = shards / "r000-w000-00000.jsonl.part"
    part.write_bytes(part.read_bytes()[:-20])  # the second line torn
    recover_all(shards)
    kept, summary = load_records(shards, "r000-w000-00000")
    assert [r.path for r in kept] == [records[0].path]
    assert summary["bytes"] == kept[0].offset + kept[0].nbytes


class _RawCodec:
    """Bytes as they are (the writer asks only for ``chunk_frames``)."""

    chunk_frames = 0
