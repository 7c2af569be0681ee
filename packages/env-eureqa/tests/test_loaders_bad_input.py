"""A EUREQA parquet file is untrusted input: each defect gives one clear error; skipped rows are reported."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from env_eureqa import EureqaEnv
from vpo_core.data import DataError

DATA = Path(__file__).parent / "data"
HARD = "questions_hard_5-00000-of-00001.parquet"
NORMAL = "questions_normal_5-00000-of-00001.parquet"


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "eureqa")
    return tmp_path / "eureqa"


def _rows(name: str = HARD) -> list[dict]:
    return pq.read_table(DATA / "data" / name).to_pylist()


def _write(folder: Path, rows: list[dict], name: str = HARD) -> None:
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / name)


def test_empty_and_truncated_files(tmp_path):
    folder = _copy(tmp_path)
    (folder / "data" / HARD).write_bytes(b"")
    with pytest.raises(DataError, match=rf"{HARD} is empty \(0 bytes\); expected a parquet file"):
        EureqaEnv(data_dir=folder).tasks("test")
    raw = (DATA / "data" / HARD).read_bytes()
    (folder / "data" / HARD).write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match=rf"{HARD} is not a readable parquet file .*truncated"):
        EureqaEnv(data_dir=folder).tasks("test")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(entities="Robert_Rodriguez"), r"row 2, field 'entities': a str \('Robert_Rodriguez'\)"),
        (
            lambda r: r.update(entities=[1, 2, 3, 4, 5, 6]),
            r"row 2, field 'entities\[0\]': a int \(1\); expected a string",
        ),
        (lambda r: r.update(question=None), r"row 2, field 'question': missing"),
        (lambda r: r.update(idx="7"), r"row 2, field 'idx': a str \('7'\); expected an integer"),
    ],
)
def test_wrong_types_and_missing_fields_name_file_row_and_field(tmp_path, edit, message):
    folder = _copy(tmp_path)
    rows = _rows()
    for row in rows:  # the column must keep one type for pyarrow: edit every row, report the first bad one
        row.update(idx=row["idx"])
    edit(rows[2])
    # a mixed-type column cannot be written as parquet: write the edited row's column as strings where needed
    try:
        _write(folder, rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        for row in rows:
            edit(row)
        _write(folder, rows)
        message = message.replace("row 2", "row 0")
    with pytest.raises(DataError, match=rf"{HARD}, {message}"):
        EureqaEnv(data_dir=folder).tasks("test")


def test_a_missing_column_is_named(tmp_path):
    folder = _copy(tmp_path)
    rows = [{k: v for k, v in r.items() if k != "entities"} for r in _rows()]
    _write(folder, rows)
    with pytest.raises(
        DataError, match=rf"{HARD}, row 0, field 'entities': missing \(fields present: entity_masks, idx"
    ):
        EureqaEnv(data_dir=folder).tasks("test")


def test_skipped_rows_are_counted_and_logged(tmp_path, caplog):
    folder = _copy(tmp_path)
    rows = _rows()
    rows[0]["entities"] = rows[0]["entities"][:5]
    _write(folder, rows)
    env = EureqaEnv(data_dir=folder)
    with caplog.at_level(logging.WARNING, logger="env_eureqa"):
        n = len(env.tasks("train")) + len(env.tasks("test"))
    assert n == 4 + 8 - 2  # the fixture already holds one row with five masks
    assert env.filtered == {"questions_normal_5": 0, "questions_hard_5": 2}
    assert "EUREQA questions_hard_5: 2 of 8 rows skipped (2 with fewer than 6 masks or entities)" in caplog.text


def test_an_empty_split_is_an_error_not_zero_tasks(tmp_path):
    folder = _copy(tmp_path)
    rows = _rows()
    for row in rows:
        row["entity_masks"] = row["entity_masks"][:3]
    _write(folder, rows)
    with pytest.raises(DataError, match=r"the EUREQA test split is empty: .* questions_hard_5 0 \(8 skipped\)"):
        EureqaEnv(data_dir=folder).tasks("test")
    table = pq.read_table(DATA / "data" / HARD).slice(0, 0)
    pq.write_table(table, folder / "data" / HARD)
    with pytest.raises(DataError, match=rf"{HARD} has no rows"):
        EureqaEnv(data_dir=folder).tasks("test")


def test_edited_local_files_are_reloaded(tmp_path):
    folder = _copy(tmp_path)
    before = {t.payload.idx for t in EureqaEnv(data_dir=folder).tasks("train")}
    rows = _rows(NORMAL)
    for row in rows:
        row["idx"] += 1000
    _write(folder, rows, name=NORMAL)
    after = {t.payload.idx for t in EureqaEnv(data_dir=folder).tasks("train")}
    assert after != before
    assert {r["idx"] for r in rows} <= after


def test_data_source_names_id_revision_and_files():
    source = EureqaEnv(data_dir=DATA).data_source()
    assert (source["hub_id"], source["revision"], source["commit"]) == ("vincentleebang/EUREQA", "main", None)
    assert [Path(f["path"]).name for f in source["files"]] == [NORMAL, HARD]
    assert EureqaEnv(hub_id="me/EUREQA", revision="v1").data_source()["hub_id"] == "me/EUREQA"


def test_offline_message_gives_the_hf_download_command(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    with pytest.raises(
        FileNotFoundError, match=r"hf download vincentleebang/EUREQA --repo-type dataset --revision main --local-dir"
    ):
        EureqaEnv().tasks("test")
