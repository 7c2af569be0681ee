"""A MuSiQue file on disk is untrusted input: each defect gives one clear error naming file, row, field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from env_musique import MusiqueEnv
from vpo_core.data import DataError

DATA = Path(__file__).parent / "data"
DEV, TRAIN = "musique_ans_v1.0_dev.jsonl", "musique_ans_v1.0_train.jsonl"


def _rows(name: str = DEV) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def _folder(tmp_path: Path, dev: list[dict] | str, train: list[dict] | str | None = None) -> Path:
    for name, rows in ((DEV, dev), (TRAIN, _rows(TRAIN) if train is None else train)):
        text = rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows)
        (tmp_path / name).write_text(text)
    return tmp_path


def _load(folder: Path, split: str = "test") -> list:
    return MusiqueEnv(data_dir=folder, test_per_hop=2).tasks(split)


def test_empty_file(tmp_path):
    with pytest.raises(DataError, match=rf"{DEV} is empty; expected one JSON object per line"):
        _load(_folder(tmp_path, ""))


def test_truncated_last_line(tmp_path):
    text = "".join(json.dumps(r) + "\n" for r in _rows())
    with pytest.raises(DataError, match=rf"{DEV}, line 9: not valid JSON .*truncated"):
        _load(_folder(tmp_path, text[: len(text) - 200]))


def test_a_line_that_is_not_an_object(tmp_path):
    with pytest.raises(DataError, match=rf"{DEV}, line 2: a JSON list, expected an object"):
        _load(_folder(tmp_path, "".join(json.dumps(r) + "\n" for r in [_rows()[0], [1, 2]])))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("paragraphs"), r"row 3, field 'paragraphs': missing \(fields present: answer, "),
        (lambda r: r.update(paragraphs="text"), r"row 3, field 'paragraphs': a str \('text'\); expected a list"),
        (lambda r: r["paragraphs"][4].update(idx="4"), r"row 3, field 'paragraphs\[4\]\.idx': a str"),
        (lambda r: r["paragraphs"].__setitem__(2, 7), r"row 3, field 'paragraphs\[2\]': a int"),
        (lambda r: r.update(question_decomposition=[]), r"row 3, field 'question_decomposition': 0 steps"),
        (
            lambda r: r["question_decomposition"][0].update(paragraph_support_idx=None),
            r"row 3, field 'question_decomposition\[0\]\.paragraph_support_idx': missing; expected an integer",
        ),
        (lambda r: r.update(answer=5), r"row 3, field 'answer': a int \(5\); expected a string"),
        (
            lambda r: r.update(answer_aliases="Paris"),
            r"row 3, field 'answer_aliases': a str \('Paris'\); expected a list",
        ),
        (lambda r: r.update(id=None), r"row 3, field 'id': missing"),
    ],
)
def test_wrong_types_and_missing_fields_name_file_row_and_field(tmp_path, edit, message):
    rows = _rows()
    edit(rows[3])
    with pytest.raises(DataError, match=rf"{DEV}, {message}"):
        _load(_folder(tmp_path, rows))


def test_a_file_of_blank_lines_is_empty(tmp_path):
    with pytest.raises(DataError, match=rf"{TRAIN} is empty"):
        _load(_folder(tmp_path, _rows(), train="\n\n"), "train")


def test_edited_local_files_are_reloaded_not_served_from_a_cache(tmp_path):
    folder = _folder(tmp_path, _rows())
    assert _load(folder, "train")[0].payload.question == _rows(TRAIN)[0]["question"]
    edited = _rows(TRAIN)
    edited[0]["question"] = "Edited question?"
    _folder(tmp_path, _rows(), train=edited)
    assert _load(folder, "train")[0].payload.question == "Edited question?"


def test_data_source_records_what_was_read(tmp_path):
    env = MusiqueEnv(data_dir=DATA)
    local = env.data_source()
    assert local["hub_id"] == "dgslibisey/MuSiQue"
    assert local["data_dir"] == str(DATA)
    assert [f["path"] for f in local["files"]] == [str(DATA / TRAIN), str(DATA / DEV)]
    assert all(len(f["sha256"]) == 64 for f in local["files"])
    hub = MusiqueEnv(hub_id="someone/MuSiQue-copy", revision="0123456789abcdef0123456789abcdef01234567").data_source()
    assert hub == {
        "env_id": "musique-v1",
        "hub_id": "someone/MuSiQue-copy",
        "revision": "0123456789abcdef0123456789abcdef01234567",
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "data_dir": None,
        "files": [],
    }
    assert json.loads(json.dumps(hub)) == hub


@pytest.mark.parametrize("offline", ["1", "0"])
def test_missing_hub_dataset_fails_in_seconds_offline(tmp_path, offline):
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": offline,
        "HF_DATASETS_OFFLINE": offline,
        "HF_ENDPOINT": "http://127.0.0.1:9",  # nothing listens there: no test touches the network
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
        "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets"),
    }
    code = "from env_musique import MusiqueEnv\nMusiqueEnv().tasks('test')"
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    seconds = time.perf_counter() - start
    assert out.returncode != 0
    assert seconds < 15, f"took {seconds:.1f} s"
    err = out.stderr
    assert "FileNotFoundError" in err
    assert "hf download dgslibisey/MuSiQue --repo-type dataset --revision main" in err
    assert "data_dir=" in err
    assert "huggingface-cli" not in err
    if offline == "0":
        assert "cannot be reached" in err
