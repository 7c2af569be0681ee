"""Code-problem files are untrusted input: each defect gives one clear error; nothing is silently dropped."""

from __future__ import annotations

import base64
import json
import logging
import pickle
import shutil
import time
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from env_lcb import LcbEnv
from vpo_core.data import DataError

DATA = Path(__file__).parent / "data"
TEST_FILE = Path("lcbv5") / "test-00000-of-00001.parquet"


def _deepcoder(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "deepcoder", tmp_path / "deepcoder")
    return tmp_path / "deepcoder"


def _rows(folder: Path) -> list[dict]:
    return pq.read_table(folder / TEST_FILE).to_pylist()


def _write(folder: Path, rows: list[dict]) -> None:
    pq.write_table(pa.Table.from_pylist(rows), folder / TEST_FILE)


def _lite(tmp_path: Path, edit=None, text: str | None = None) -> Path:
    folder = tmp_path / "lite"
    folder.mkdir(parents=True)
    rows = [json.loads(line) for line in (DATA / "lite" / "test.jsonl").read_text().splitlines()]
    if edit is not None:
        edit(rows[0])
    (folder / "test.jsonl").write_text(text if text is not None else "".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_edited_local_files_are_reloaded_not_served_from_the_datasets_cache(tmp_path):
    folder = _deepcoder(tmp_path)
    assert len(LcbEnv(data_dir=folder).tasks("test")) == 2
    _write(folder, _rows(folder)[:1])
    assert len(LcbEnv(data_dir=folder).tasks("test")) == 1


@pytest.mark.parametrize("change", ["drop", "rename", "empty"])
def test_a_missing_renamed_or_empty_tests_column_is_an_error_not_zero_tasks(tmp_path, change):
    folder = _deepcoder(tmp_path)
    rows = _rows(folder)
    for row in rows:
        if change == "empty":
            row["tests"] = "[]"
        else:
            value = row.pop("tests")
            if change == "rename":
                row["test_cases"] = value
    _write(folder, rows)
    message = (
        r"has no problems: 2 rows read, 2 without tests"
        if change == "empty"
        else rf"{TEST_FILE}, row 0, field 'tests': missing \(fields present: metadata, problem, starter_code"
    )
    with pytest.raises(DataError, match=message):
        LcbEnv(data_dir=folder).tasks("test")


def test_rows_without_tests_are_counted_and_logged(tmp_path, caplog):
    folder = _deepcoder(tmp_path)
    rows = _rows(folder)
    rows[0]["tests"] = "[]"
    _write(folder, rows)
    env = LcbEnv(data_dir=folder)
    with caplog.at_level(logging.WARNING, logger="env_lcb"):
        assert len(env.tasks("test")) == 1
    assert env.filtered == {"test": {"without tests": 1}}
    assert "the DeepCoder test split (lcbv5/test): 1 of 2 rows skipped (1 without tests)" in caplog.text


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ("[{not json", r"field 'tests': a string that is not valid JSON"),
        ("5", r"field 'tests': JSON of type int"),
        ('[{"input": "1"}]', r"field 'tests\[0\]': a dict without input/output"),
        ('{"inputs": [1, 2], "outputs": [1]}', r"field 'tests': a TACO object whose inputs/outputs are not two lists"),
    ],
)
def test_malformed_tests_name_file_row_and_field(tmp_path, tests, message):
    folder = _deepcoder(tmp_path)
    rows = _rows(folder)
    rows[1]["tests"] = tests
    _write(folder, rows)
    with pytest.raises(DataError, match=rf"{TEST_FILE}, row 1, {message}"):
        LcbEnv(data_dir=folder).tasks("test")


def test_truncated_and_empty_parquet(tmp_path):
    folder = _deepcoder(tmp_path)
    raw = (folder / TEST_FILE).read_bytes()
    (folder / TEST_FILE).write_bytes(raw[: len(raw) // 3])
    with pytest.raises(DataError, match=rf"{TEST_FILE} is not a readable parquet file"):
        LcbEnv(data_dir=folder).tasks("test")
    (folder / TEST_FILE).write_bytes(b"")
    with pytest.raises(DataError, match=rf"{TEST_FILE} is empty"):
        LcbEnv(data_dir=folder).tasks("test")


def _evil_pickle() -> str:
    class Boom:
        def __reduce__(self):
            return (print, ("pwned",))

    return base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r.update(private_test_cases="!!not base64!!"),
            r"field 'private_test_cases': neither JSON nor .*Error",
        ),
        (
            lambda r: r.update(private_test_cases=_evil_pickle()),
            r"field 'private_test_cases': .*refusing to load builtins\.print",
        ),
        (lambda r: r.update(public_test_cases="[{"), r"field 'public_test_cases': a string that is not valid JSON"),
        (lambda r: r.update(contest_date=20240901), r"field 'contest_date': 20240901; expected an ISO date"),
        (lambda r: r.pop("question_content"), r"field 'question_content': missing"),
    ],
)
def test_lite_rows_with_bad_fields(tmp_path, capsys, edit, message):
    with pytest.raises(DataError, match=rf"test.jsonl, row 0, {message}"):
        LcbEnv(data_dir=_lite(tmp_path, edit), source="lcb_lite").tasks("test")
    assert "pwned" not in capsys.readouterr().out


def test_lite_empty_and_truncated_files(tmp_path):
    with pytest.raises(DataError, match=r"test.jsonl is empty; expected one JSON object per line"):
        LcbEnv(data_dir=_lite(tmp_path, text=""), source="lcb_lite").tasks("test")
    text = (DATA / "lite" / "test.jsonl").read_text()
    with pytest.raises(DataError, match=r"test.jsonl, line 3: not valid JSON .*truncated"):
        LcbEnv(data_dir=_lite(tmp_path / "b", text=text[:-30]), source="lcb_lite").tasks("test")


def test_data_source_names_hub_revision_and_files():
    source = LcbEnv(data_dir=DATA / "deepcoder").data_source()
    assert (source["hub_id"], source["revision"]) == ("agentica-org/DeepCoder-Preview-Dataset", "main")
    assert [Path(f["path"]).parent.name for f in source["files"]] == ["lcbv5", "lcbv5", "primeintellect", "taco"]
    lite = LcbEnv(data_dir=DATA / "lite", source="lcb_lite").data_source()
    assert (lite["hub_id"], [Path(f["path"]).name for f in lite["files"]]) == (None, ["test.jsonl"])
    assert LcbEnv(revision="0" * 40).data_source()["commit"] == "0" * 40


def test_unreachable_hub_fails_fast_with_the_download_command(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: no network is used
    start = time.perf_counter()
    with pytest.raises(
        FileNotFoundError,
        match=r"(?s)cannot be reached.*hf download agentica-org/DeepCoder-Preview-Dataset "
        r"--repo-type dataset --revision v9 --include 'README.md' --include 'lcbv5/\*'",
    ):
        LcbEnv(revision="v9").tasks("test")
    assert time.perf_counter() - start < 5


# ------------------------------------------------------------------ issue 22: tests nobody can pass / anyone passes
def test_unpassable_and_blank_tests_are_dropped_counted_and_logged(tmp_path, caplog):
    folder = _deepcoder(tmp_path)
    rows = _rows(folder)
    stdin_tests = json.loads(rows[0]["tests"])
    stdin_tests.append({"input": "4 4\n", "output": "  \n", "testtype": "stdin"})  # an empty program passes it
    rows[0]["tests"] = json.dumps(stdin_tests)
    functional = json.loads(rows[1]["tests"])
    functional.append({"input": "[1, 2]\n3", "output": "[0, 1", "testtype": "functional"})  # not JSON
    rows[1]["tests"] = json.dumps(functional)
    _write(folder, rows)
    env = LcbEnv(data_dir=folder)
    with caplog.at_level(logging.WARNING, logger="env_lcb"):
        tasks = env.tasks("test")
    assert len(tasks) == 2
    assert env.filtered["test"]["tests whose expected output is blank (an empty program passes them)"] == 1
    assert env.filtered["test"]["functional tests whose expected output is not JSON (nobody can pass them)"] == 1
    assert "dropped 1 tests whose expected output is blank" in caplog.text
    assert "1 functional tests whose expected output is not JSON" in caplog.text


def test_a_row_whose_tests_are_all_blank_is_skipped(tmp_path):
    folder = _deepcoder(tmp_path)
    rows = _rows(folder)
    rows[0]["tests"] = json.dumps([{"input": "1\n", "output": "", "testtype": "stdin"}])
    _write(folder, rows)
    env = LcbEnv(data_dir=folder)
    assert len(env.tasks("test")) == 1
    assert env.filtered["test"]["without tests"] == 1
