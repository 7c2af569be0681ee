"""An rlla_4k parquet file is untrusted input: each defect gives one clear error naming file, row, field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from env_toolrl import ToolRLEnv
from vpo_core.data import DataError

DATA = Path(__file__).parent / "data"


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "toolrl")
    return tmp_path / "toolrl"


def _rows() -> list[dict]:
    return pq.read_table(DATA / "test.parquet").to_pylist()[:5]


def _write(folder: Path, rows: list[dict]) -> None:
    pq.write_table(pa.Table.from_pylist(rows), folder / "test.parquet")


def test_empty_truncated_and_rowless_files(tmp_path):
    folder = _copy(tmp_path)
    (folder / "test.parquet").write_bytes(b"")
    with pytest.raises(DataError, match=r"test.parquet is empty \(0 bytes\)"):
        ToolRLEnv(data_dir=folder).tasks("test")
    raw = (DATA / "test.parquet").read_bytes()
    (folder / "test.parquet").write_bytes(raw[:-100])
    with pytest.raises(DataError, match=r"test.parquet is not a readable parquet file .*download it again"):
        ToolRLEnv(data_dir=folder).tasks("test")
    pq.write_table(pq.read_table(DATA / "test.parquet").slice(0, 0), folder / "test.parquet")
    with pytest.raises(DataError, match=r"test.parquet has no rows"):
        ToolRLEnv(data_dir=folder).tasks("test")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r.update(reward_model={"style": "rule"}),
            r"field 'reward_model.ground_truth': missing; expected the gold reply",
        ),
        (lambda r: r.update(reward_model="gold"), r"field 'reward_model': a str \('gold'\)"),
        (lambda r: r.update(prompt=[]), r"field 'prompt': an empty list"),
        (lambda r: r.update(prompt=[{"role": "user", "content": 3}]), r"field 'prompt\[0\]\.content': a int \(3\)"),
        (lambda r: r.update(prompt=[{"role": "robot", "content": "x"}]), r"field 'prompt\[0\]\.role': 'robot'"),
        (lambda r: r.update(prompt=[{"role": "system", "content": "x"}]), r"field 'prompt': no user message"),
        (lambda r: r.pop("prompt"), r"field 'prompt': missing \(fields present: ability, data_source"),
    ],
)
def test_wrong_types_and_missing_fields_name_file_row_and_field(tmp_path, edit, message):
    folder = _copy(tmp_path)
    rows = _rows()
    for row in rows:  # parquet columns have one type: edit every row, so row 0 is the first bad one
        edit(row)
    _write(folder, rows)
    with pytest.raises(DataError, match=rf"test.parquet, row 0, (?:{message})"):
        ToolRLEnv(data_dir=folder).tasks("test")


def test_edited_local_files_are_reloaded(tmp_path):
    folder = _copy(tmp_path)
    assert len(ToolRLEnv(data_dir=folder).tasks("test")) == 80
    _write(folder, _rows())
    assert len(ToolRLEnv(data_dir=folder).tasks("test")) == 5


def test_data_source_and_the_download_command_name_the_revision(monkeypatch, tmp_path):
    source = ToolRLEnv(data_dir=DATA).data_source()
    assert source["upstream"] == "https://github.com/qiancheng0/ToolRL"
    assert source["revision"] == "main"
    assert [Path(f["path"]).name for f in source["files"]] == ["train.parquet", "test.parquet"]
    monkeypatch.delenv("VPO_TOOLRL_DIR", raising=False)
    with pytest.raises(
        FileNotFoundError, match=r"raw\.githubusercontent\.com/qiancheng0/ToolRL/abc123/dataset/rlla_4k"
    ):
        ToolRLEnv(revision="abc123").tasks("test")
