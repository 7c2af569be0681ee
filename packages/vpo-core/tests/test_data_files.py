"""vpo_core.data: untrusted files give errors naming file/line/field; the Hub fails fast when unreachable."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vpo_core import data
from vpo_core.data import (
    DataError,
    RowReader,
    check_type,
    hf_download_command,
    hub_commit,
    hub_data_source,
    load_checked_rows,
    load_hub_split,
    read_jsonl,
    read_parquet,
)
from vpo_core.testing import interpreter_default_limits


def test_read_jsonl_names_the_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert read_jsonl(path, expected="{a}") == [{"a": 1}, {"a": 2}]
    path.write_text('{"a": 1}\n{"a": ')
    with pytest.raises(DataError, match=r"rows.jsonl, line 2: not valid JSON .*truncated.*expected one JSON object"):
        read_jsonl(path, expected="{a}")
    path.write_text('{"a": 1}\n"text"\n{"a": 3}\n')
    with pytest.raises(DataError, match=r"rows.jsonl, line 2: a JSON str, expected an object \(\{a\}\)"):
        read_jsonl(path, expected="{a}")
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(DataError, match=r"rows.jsonl, line 2: not UTF-8"):
        read_jsonl(path, expected="{a}")
    path.write_text("  \n")
    with pytest.raises(DataError, match=r"rows.jsonl is empty"):
        read_jsonl(path, expected="{a}")
    path.write_text('{"a": ' + "9" * 5000 + "}\n")
    with interpreter_default_limits(), pytest.raises(DataError, match=r"line 1: not valid JSON \(Exceeds the limit"):
        read_jsonl(path, expected="{a}")
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "absent.jsonl", expected="{a}")


def test_read_parquet_errors(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    assert read_parquet(path, expected="{a}") == [{"a": 1}, {"a": 2}]
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(DataError, match=r"t.parquet is not a readable parquet file"):
        read_parquet(path, expected="{a}")
    path.write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match=r"t.parquet is not a readable parquet file"):
        read_parquet(path, expected="{a}")


def test_row_reader_names_source_row_and_field():
    row = RowReader({"n": 3, "flag": True, "s": None}, "f.jsonl", 7, "{n: int, s: str}")
    assert row.get("n", int, "an integer") == 3
    assert row.get("s", str, "a string", default="x") == "x"
    with pytest.raises(DataError, match=r"^f.jsonl, row 7, field 'flag': a bool \(True\); expected an integer\.$"):
        row.get("flag", int, "an integer")
    with pytest.raises(DataError, match=r"f.jsonl, row 7, field 'name': missing \(fields present: flag, n, s\)"):
        row.get("name", str, "a string")
    with pytest.raises(DataError, match=r"f.jsonl, row 7, field 's': missing \(null\); expected a string"):
        row.get("s", str, "a string")
    with pytest.raises(DataError, match=r"f.jsonl, row 2: a list, expected an object \(\{n\}\)"):
        RowReader([1], "f.jsonl", 2, "{n}")


def test_error_for_names_a_nested_field_for_check_type():
    row = RowReader({"items": ["a", 7]}, "f.jsonl", 3, "{items: list<string>}")
    items = row.get("items", list, "a list of strings")
    assert check_type(items[0], str, row.error_for("items[0]", "a string")) == "a"
    with pytest.raises(DataError, match=r"^f.jsonl, row 3, field 'items\[1\]': a int \(7\); expected a string\.$"):
        check_type(items[1], str, row.error_for("items[1]", "a string"))
    with pytest.raises(DataError, match=r"field 'items\[1\]': missing; expected \{items: list<string>\}\.$"):
        check_type(None, str, row.error_for("items[1]"))


def test_download_command_and_cached_commit(tmp_path, monkeypatch):
    assert hf_download_command("o/d", "v2", "out", include=("a/*",)) == (
        "hf download o/d --repo-type dataset --revision v2 --include 'a/*' --local-dir out"
    )
    sha = "a" * 40
    assert hub_commit("o/d", sha) == sha
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert hub_commit("o/d", "main") is None
    ref = tmp_path / "datasets--o--d" / "refs" / "main"
    ref.parent.mkdir(parents=True)
    ref.write_text("b" * 40)
    assert hub_commit("o/d", "main") == "b" * 40


def _how(detail: str) -> str:
    return f"no data ({detail}); use `hf download ...` or data_dir=<folder>"


def test_an_unreachable_hub_fails_in_seconds_with_the_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    start = time.perf_counter()
    with pytest.raises(
        FileNotFoundError, match=r"the Hub \(http://127.0.0.1:9\) cannot be reached.*HF_HUB_OFFLINE=1.*hf download"
    ):
        load_hub_split("o/d", split="train", revision="main", how_to_get=_how)
    assert time.perf_counter() - start < 5


def test_offline_mode_set_after_import_is_honoured_and_restored(monkeypatch, tmp_path):
    import datasets.config
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)  # as if the flag came after the import
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = time.perf_counter()
    with pytest.raises(FileNotFoundError, match=r"in offline mode \(HF_HUB_OFFLINE=1\).*data_dir=<folder>"):
        load_hub_split("o/d", split="train", revision="main", how_to_get=_how)
    assert time.perf_counter() - start < 10
    assert datasets.config.HF_HUB_OFFLINE is False
    assert constants.HF_HUB_OFFLINE is False


def test_a_proxy_is_probed_instead_of_the_endpoint(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert "127.0.0.1:9" in data.hub_unreachable_reason(timeout_s=1.0)


def test_a_data_error_is_a_user_error_the_commands_report_in_one_line():
    from vpo_core.data import DataError
    from vpo_core.errors import DataFileError, UserError

    assert issubclass(DataError, DataFileError)
    assert issubclass(DataError, UserError)
    assert issubclass(DataError, ValueError)  # callers that caught ValueError still do


def test_load_checked_rows_reads_a_local_file_and_checks_each_row(tmp_path):
    def check(row):
        return row.get("a", int, "an integer")

    kwargs = {"hub_id": "o/d", "revision": "main", "expected": "{a: int}", "how_to_get": _how, "check": check}

    jsonl, parquet = tmp_path / "train.jsonl", tmp_path / "train.parquet"
    jsonl.write_text('{"a": 1}\n{"a": 2}\n')
    pq.write_table(pa.table({"a": [3]}), parquet)
    assert load_checked_rows("train", local=jsonl, **kwargs) == [1, 2]
    assert load_checked_rows("train", local=parquet, **kwargs) == [3]
    jsonl.write_text('{"a": 1}\n{"a": "2"}\n')
    with pytest.raises(DataError, match=r"train.jsonl, row 1, field 'a': a str \('2'\); expected an integer"):
        load_checked_rows("train", local=jsonl, **kwargs)
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), parquet)
    with pytest.raises(DataError, match=r"train.parquet has no rows; expected \{a: int\} rows\."):
        load_checked_rows("train", local=parquet, **kwargs)
    with pytest.raises(FileNotFoundError, match=r"no data \(.*missing.jsonl does not exist\); use `hf download"):
        load_checked_rows("train", local=tmp_path / "missing.jsonl", **kwargs)


def test_hub_data_source_records_the_files_read_or_the_cached_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    (tmp_path / "a.jsonl").write_text("{}\n")
    local = hub_data_source(
        "x-v1",
        hub_id="o/d",
        revision="main",
        data_dir=str(tmp_path),
        files=[tmp_path / "a.jsonl", tmp_path / "b.jsonl"],
    )
    assert (local["env_id"], local["commit"], [f["path"] for f in local["files"]]) == (
        "x-v1",
        None,
        [str(tmp_path / "a.jsonl")],
    )
    hub = hub_data_source("x-v1", hub_id="o/d", revision="c" * 40, data_dir=None, files=[])
    assert hub == {
        "env_id": "x-v1",
        "hub_id": "o/d",
        "revision": "c" * 40,
        "commit": "c" * 40,
        "data_dir": None,
        "files": [],
    }
