"""Loading code problems: the DeepCoder corpus and LiveCodeBench's ``code_generation_lite`` format.

* DeepCoder (``agentica-org/DeepCoder-Preview-Dataset``; configs ``primeintellect``, ``taco``,
  ``lcbv5``): train = primeintellect + taco + lcbv5 ``train``; test = lcbv5 ``test`` (279 problems,
  LiveCodeBench v5, Aug 2024 – Feb 2025). A local copy keeps the Hub layout
  ``<config>/<split>-NNNNN-of-NNNNN.parquet`` with the README's ``configs:`` YAML.
* ``code_generation_lite`` jsonl files (``test*.jsonl``): public + private tests, the private ones
  possibly base64 → zlib → pickle → JSON. Split by ``contest_date`` (test: from 2024-08-01).

Every row is checked against its upstream format: a defect raises `vpo_core.data.DataError` naming
the file (or Hub split), the row and the field. Tests nobody can pass (a functional test whose expected
output is not JSON) and tests an empty program passes (a blank expected output) are dropped, counted
and logged; rows left without any test are skipped, counted and logged; a split left empty is an error. Local files are read from disk on every load (never from
the ``datasets`` cache), and pickled private tests are unpickled with no class allowed (only the
JSON string the format stores), so a crafted file cannot run code.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import os
import pickle
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vpo_core.data import (
    DataError,
    RowReader,
    file_record,
    hf_download_command,
    hub_commit,
    load_hub_split,
    read_jsonl,
    read_parquet,
    report_filtered,
)

__all__ = ["DEFAULT_REVISION", "HUB_ID", "Problem", "data_source", "load_problems"]

HUB_ID = "agentica-org/DeepCoder-Preview-Dataset"
DEFAULT_REVISION = "main"
"""No commit of the DeepCoder dataset could be looked up offline; `data_source` records the commit the
cache resolved ``main`` to. Pass ``revision=<commit>`` to pin one."""
TRAIN_CONFIGS = ("primeintellect", "taco", "lcbv5")
DEEPCODER_FORMAT = (
    "a DeepCoder row {problem: string, tests: JSON string of [{input, output, testtype|type, fn_name?}] or "
    "{inputs: [...], outputs: [...], fn_name?}, starter_code?, metadata?: JSON {func_name}, solutions?}"
)
LITE_FORMAT = (
    "a code_generation_lite row {question_id, question_content, contest_date: 'YYYY-MM-DDTHH:MM:SS', starter_code, "
    "public_test_cases: JSON list of {input, output, testtype}, private_test_cases: the same JSON or "
    "base64(zlib(pickle(JSON))), metadata: JSON {func_name}}"
)
_log = logging.getLogger("env_lcb")


@dataclass(frozen=True)
class Problem:
    """One problem: statement, starter code, tests as (input, output) strings, function name if functional."""

    pid: str
    question: str
    starter_code: str
    tests: tuple[tuple[str, str], ...]
    fn_name: str | None
    solution: str | None


def _json_field(row: RowReader, field: str, expected: str, *, default: Any = ...) -> Any:
    """A field stored as a JSON string (or already decoded by the reader)."""
    value = row.get(field, (str, list, dict), expected, default=default)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise row.fail(field, f"a string that is not valid JSON ({exc})", expected) from exc


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _decoded(value: Any) -> Any:
    """A JSON string decoded, anything else (or a string that is not JSON) unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _functional_io(args: Any, output: Any) -> tuple[str, str]:
    """Argument list → LCB functional input (one JSON value per line); a one-element list output is unwrapped."""
    args = _decoded(args)
    if isinstance(args, str):
        text_in = args
    else:
        text_in = "\n".join(json.dumps(a) for a in (args if isinstance(args, list) else [args]))
    output = _decoded(output)
    if isinstance(output, list) and len(output) == 1:
        output = output[0]
    return text_in, json.dumps(output)


UNPASSABLE = "functional tests whose expected output is not JSON (nobody can pass them)"
BLANK = "tests whose expected output is blank (an empty program passes them)"


def _usable(tests: list[tuple[str, str]], functional: bool, dropped: dict[str, int]) -> list[tuple[str, str]]:
    """The tests a program's verdict can depend on; the others are counted in `dropped` by reason."""
    kept = []
    for test in tests:
        if not test[1].strip():
            dropped[BLANK] = dropped.get(BLANK, 0) + 1
            continue
        if functional:
            try:
                json.loads(test[1])
            except (ValueError, RecursionError):
                dropped[UNPASSABLE] = dropped.get(UNPASSABLE, 0) + 1
                continue
        kept.append(test)
    return kept


def _select(tests: list[tuple[str, str]], max_tests: int) -> tuple[tuple[str, str], ...]:
    """Keep the `max_tests` smallest tests (by input + output length), in their original order."""
    if len(tests) <= max_tests:
        return tuple(tests)
    keep = sorted(range(len(tests)), key=lambda i: (len(tests[i][0]) + len(tests[i][1]), i))[:max_tests]
    return tuple(tests[i] for i in sorted(keep))


def _from_deepcoder(config: str, index: int, row: RowReader, max_tests: int, dropped: dict[str, int]) -> Problem | None:
    raw = _json_field(row, "tests", "a JSON list of tests or a TACO {inputs, outputs} object")
    metadata = _json_field(row, "metadata", "a JSON object {func_name}", default={})
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    tests: list[tuple[str, str]] = []
    if isinstance(raw, dict):  # TACO: {"inputs": [...], "outputs": [...], "fn_name"?}
        fn_name = raw.get("fn_name") or fn_name
        inputs, outputs = raw.get("inputs", []), raw.get("outputs", [])
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
            raise row.fail(
                "tests", "a TACO object whose inputs/outputs are not two lists of one length", DEEPCODER_FORMAT
            )
        for args, out in zip(inputs, outputs, strict=True):
            tests.append(_functional_io(args, out) if fn_name else (_as_text(args), _as_text(out)))
    elif isinstance(raw, list):
        for j, test in enumerate(raw):
            if not isinstance(test, dict) or "input" not in test or "output" not in test:
                raise row.fail(
                    f"tests[{j}]", f"a {type(test).__name__} without input/output", "an object {input, output}"
                )
            kind = test.get("testtype") or test.get("type") or ""
            fn_name = test.get("fn_name") or fn_name
            if kind in ("functional", "function_call") or (fn_name and kind not in ("stdin", "stdin_stdout")):
                if kind == "functional":
                    tests.append((_as_text(test["input"]), _as_text(test["output"])))
                else:
                    tests.append(_functional_io(test["input"], test["output"]))
            else:
                tests.append((_as_text(test["input"]), _as_text(test["output"])))
    else:
        raise row.fail(
            "tests", f"JSON of type {type(raw).__name__}", "a list of tests or a TACO {inputs, outputs} object"
        )
    if fn_name is not None and not isinstance(fn_name, str):
        raise row.fail("metadata.func_name", f"a {type(fn_name).__name__}", "a function name string")
    tests = _usable(tests, fn_name is not None, dropped)
    if not tests:
        return None
    solutions = _json_field(row, "solutions", "a JSON list of programs", default=[])
    solution = solutions[0] if isinstance(solutions, list) and solutions and isinstance(solutions[0], str) else None
    return _problem(row, f"{config}/{index}", "problem", _select(tests, max_tests), fn_name, solution)


def _problem(
    row: RowReader,
    pid: str,
    question: str,
    tests: tuple[tuple[str, str], ...],
    fn_name: str | None,
    solution: str | None,
) -> Problem:
    """A `Problem` from a row of either format: its statement in field `question`, its starter code (or none)."""
    return Problem(
        pid=pid,
        question=row.get(question, str, "the problem statement as a string"),
        starter_code=row.get("starter_code", str, "a string", default=""),
        tests=tests,
        fn_name=fn_name,
        solution=solution,
    )


class _NoClasses(pickle.Unpickler):
    """Unpickles plain values only: a pickle that names any class or function is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: the format stores a plain JSON string")


def _private_tests(row: RowReader) -> list[Any]:
    field, expected = "private_test_cases", "a JSON list of tests, or base64(zlib(pickle(that JSON string)))"
    value = row.get(field, str, expected)
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        pass
    try:
        unpickled = _NoClasses(io.BytesIO(zlib.decompress(base64.b64decode(value.encode(), validate=True)))).load()
        return json.loads(unpickled)
    except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, TypeError, ValueError, RecursionError) as exc:
        raise row.fail(
            field, f"neither JSON nor base64/zlib/pickle/JSON ({type(exc).__name__}: {exc})", expected
        ) from exc


def _from_lite(index: int, row: RowReader, max_tests: int, dropped: dict[str, int]) -> Problem | None:
    public = _json_field(row, "public_test_cases", "a JSON list of {input, output, testtype}")
    private = _private_tests(row)
    tests = []
    for name, items in (("public_test_cases", public), ("private_test_cases", private)):
        if not isinstance(items, list):
            raise row.fail(name, f"JSON of type {type(items).__name__}", "a list of {input, output, testtype}")
        for j, test in enumerate(items):
            if not isinstance(test, dict) or "input" not in test or "output" not in test:
                raise row.fail(
                    f"{name}[{j}]", f"a {type(test).__name__} without input/output", "an object {input, output}"
                )
            tests.append(test)
    if not tests:
        return None
    metadata = _json_field(row, "metadata", "a JSON object {func_name}", default={})
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    fn_name = fn_name if tests[0].get("testtype") == "functional" and isinstance(fn_name, str) else None
    usable = _usable([(str(t["input"]), str(t["output"])) for t in tests], fn_name is not None, dropped)
    if not usable:
        return None
    pid = f"lcb/{row.get('question_id', (str, int), 'a string', default=index)}"
    return _problem(row, pid, "question_content", _select(usable, max_tests), fn_name, None)


def _contest_date(row: RowReader) -> str:
    value = row.row.get("contest_date")
    if value is None:
        raise row.fail("contest_date", "missing", "an ISO date string 'YYYY-MM-DDTHH:MM:SS'")
    text = value.isoformat() if hasattr(value, "isoformat") else value
    if not isinstance(text, str) or len(text) < 10 or text[4] != "-" or text[7] != "-":
        raise row.fail("contest_date", f"{value!r}", "an ISO date string 'YYYY-MM-DDTHH:MM:SS'")
    return text[:10]


def _how_to_get(detail: str, hub_id: str = HUB_ID, revision: str = DEFAULT_REVISION) -> str:
    command = hf_download_command(
        hub_id, revision, "deepcoder", include=("README.md", "lcbv5/*", "primeintellect/*", "taco/*")
    )
    return (
        f"code problems not available ({detail}). Either let `datasets` download DeepCoder from the Hub (`{hub_id}`, "
        f"needs network), or pass data_dir=<folder> with the Hub layout (<config>/<split>-*.parquet), e.g. after "
        f"`{command}`, or source='lcb_lite' with data_dir holding LiveCodeBench code_generation_lite test*.jsonl files."
    )


def _deepcoder_rows(
    config: str, split: str, data_dir: str | os.PathLike[str] | None, revision: str, hub_id: str
) -> Iterator[tuple[str, int, Any]]:
    """(source, row number, row) of one DeepCoder config and split, local files in name order."""
    if data_dir is None:
        rows = load_hub_split(
            hub_id, name=config, split=split, revision=revision, how_to_get=lambda d: _how_to_get(d, hub_id, revision)
        )
        yield from ((f"{hub_id}@{revision} ({config}/{split})", i, row) for i, row in enumerate(rows))
        return
    folder = Path(data_dir).expanduser()
    files = sorted((folder / config).glob(f"{split}-*.parquet"))
    if not files:
        raise FileNotFoundError(_how_to_get(f"no {config}/{split}-*.parquet in {folder}", hub_id, revision))
    for path in files:
        yield from ((str(path), i, row) for i, row in enumerate(read_parquet(path, expected=DEEPCODER_FORMAT)))


@dataclass
class _Reading:
    """The problems of a split as its rows are read: those kept, the rows read, what was left out.

    Attributes:
        max_tests: Tests kept per problem (the smallest).
        problems: The problems kept, in reading order.
        rows: Rows read (kept, skipped, or of the other split).
        skipped: Rows skipped, by reason.
        dropped: Tests dropped from kept or skipped rows, by reason.
    """

    max_tests: int
    problems: list[Problem] = field(default_factory=list)
    rows: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: {"without tests": 0})
    dropped: dict[str, int] = field(default_factory=dict)

    def keep(self, problem: Problem | None) -> None:
        """Count one row of the split: its problem, or None for a row without tests (skipped)."""
        self.rows += 1
        if problem is None:
            self.skipped["without tests"] += 1
        else:
            self.problems.append(problem)


def _read_lite(
    split: str,
    data_dir: str | os.PathLike[str] | None,
    lite_test_from: str,
    reading: _Reading,
    hub_id: str,
    revision: str,
) -> str:
    """Read the problems of an lcb_lite split (by ``contest_date``) into `reading`; returns what was read."""
    if data_dir is None:
        raise FileNotFoundError(_how_to_get("source='lcb_lite' needs data_dir", hub_id, revision))
    files = sorted(Path(data_dir).expanduser().glob("test*.jsonl"))
    if not files:
        raise FileNotFoundError(_how_to_get(f"no test*.jsonl in {data_dir}", hub_id, revision))
    where = f"contest_date {'>=' if split == 'test' else '<'} {lite_test_from}"
    for path in files:
        for i, raw in enumerate(read_jsonl(path, expected=LITE_FORMAT)):
            row = RowReader(raw, str(path), i, LITE_FORMAT)
            if (_contest_date(row) >= lite_test_from) != (split == "test"):
                reading.rows += 1  # a row of the other split
                continue
            reading.keep(_from_lite(len(reading.problems), row, reading.max_tests, reading.dropped))
    return f"the lcb_lite {split} split ({where}) of {', '.join(map(str, files))}"


def _read_deepcoder(
    split: str, data_dir: str | os.PathLike[str] | None, reading: _Reading, hub_id: str, revision: str
) -> str:
    """Read the problems of a DeepCoder split (test: lcbv5, train: `TRAIN_CONFIGS`) into `reading`; returns what."""
    configs = [("lcbv5", "test")] if split == "test" else [(c, "train") for c in TRAIN_CONFIGS]
    for config, hub_split in configs:
        rows = _deepcoder_rows(config, hub_split, data_dir, revision, hub_id)
        for index, (where_from, i, raw) in enumerate(rows):
            row = RowReader(raw, where_from, i, DEEPCODER_FORMAT)
            reading.keep(_from_deepcoder(config, index, row, reading.max_tests, reading.dropped))
    return f"the DeepCoder {split} split ({', '.join(f'{c}/{s}' for c, s in configs)})"


def load_problems(
    split: str,
    *,
    source: str,
    data_dir: str | os.PathLike[str] | None,
    max_tests: int,
    revision: str = DEFAULT_REVISION,
    lite_test_from: str = "2024-08-01",
    hub_id: str = HUB_ID,
    filtered: dict[str, int] | None = None,
) -> list[Problem]:
    """The problems of a split.

    Args:
        split: ``"train"`` or ``"test"``.
        source: ``"deepcoder"`` or ``"lcb_lite"``.
        data_dir: Local folder, or None for the Hub (DeepCoder only).
        max_tests: Tests kept per problem (the smallest).
        revision: Hub revision of DeepCoder.
        lite_test_from: First ``contest_date`` of the lite test split.
        hub_id: Hub id of DeepCoder.
        filtered: If given, receives the number of rows skipped per reason, and of tests dropped per
            reason (`UNPASSABLE`, `BLANK`).

    Raises:
        ValueError: For an unknown split or source.
        FileNotFoundError: When the data cannot be found, saying how to provide it.
        DataError: When a file or row does not have the upstream format, or the split is empty.
    """
    if split not in ("train", "test"):
        raise ValueError(f"unknown LCB split {split!r}; choose train or test.")
    reading = _Reading(max_tests)
    if source == "lcb_lite":
        what = _read_lite(split, data_dir, lite_test_from, reading, hub_id, revision)
    elif source == "deepcoder":
        what = _read_deepcoder(split, data_dir, reading, hub_id, revision)
    else:
        raise ValueError(f"unknown source {source!r}; choose deepcoder or lcb_lite.")
    if reading.dropped:
        reasons = ", ".join(f"{count} {reason}" for reason, count in reading.dropped.items())
        _log.warning("%s: dropped %s; a row left without tests is skipped.", what, reasons)
    report_filtered(_log, what, reading.rows, reading.skipped)
    if filtered is not None:
        filtered.update(reading.skipped)
        filtered.update(reading.dropped)
    if not reading.problems:
        raise DataError(
            f"{what} has no problems: {reading.rows} rows read, {reading.skipped['without tests']} without tests; "
            "every problem needs at least one test ({input, output})."
        )
    return reading.problems


def data_source(
    source: str, data_dir: str | None, revision: str = DEFAULT_REVISION, hub_id: str = HUB_ID
) -> dict[str, Any]:
    """Where the problems come from, for a run's config: Hub id, revision and resolved commit, local files."""
    files: list[dict[str, Any]] = []
    if data_dir is not None:
        folder = Path(data_dir).expanduser()
        paths = folder.glob("test*.jsonl") if source == "lcb_lite" else folder.glob("*/*.parquet")
        files = [file_record(p) for p in sorted(paths)]
    return {
        "env_id": "lcb-v1",
        "source": source,
        "hub_id": hub_id if source == "deepcoder" else None,
        "revision": revision if source == "deepcoder" else None,
        "commit": hub_commit(hub_id, revision) if source == "deepcoder" and data_dir is None else None,
        "data_dir": data_dir,
        "files": files,
    }
