"""Loading code problems: the DeepCoder corpus and LiveCodeBench's ``code_generation_lite`` format.

* DeepCoder (``agentica-org/DeepCoder-Preview-Dataset``; configs ``primeintellect``, ``taco``,
  ``lcbv5``): train = primeintellect + taco + lcbv5 ``train``; test = lcbv5 ``test`` (279 problems,
  LiveCodeBench v5, Aug 2024 – Feb 2025). A local copy keeps the Hub layout
  ``<config>/<split>-NNNNN-of-NNNNN.parquet`` with the README's ``configs:`` YAML.
* ``code_generation_lite`` jsonl files (``test*.jsonl``): public + private tests, the private ones
  possibly base64 → zlib → pickle → JSON. Split by ``contest_date`` (test: from 2024-08-01).
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["HUB_ID", "Problem", "load_problems"]

HUB_ID = "agentica-org/DeepCoder-Preview-Dataset"
TRAIN_CONFIGS = ("primeintellect", "taco", "lcbv5")


@dataclass(frozen=True)
class Problem:
    """One problem: statement, starter code, tests as (input, output) strings, function name if functional."""

    pid: str
    question: str
    starter_code: str
    tests: tuple[tuple[str, str], ...]
    fn_name: str | None
    solution: str | None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _functional_io(args: Any, output: Any) -> tuple[str, str]:
    """Argument list → LCB functional input (one JSON value per line); a one-element list output is unwrapped."""
    args = _json(args)
    if isinstance(args, str):
        text_in = args
    else:
        text_in = "\n".join(json.dumps(a) for a in (args if isinstance(args, list) else [args]))
    output = _json(output)
    if isinstance(output, list) and len(output) == 1:
        output = output[0]
    return text_in, json.dumps(output)


def _select(tests: list[tuple[str, str]], max_tests: int) -> tuple[tuple[str, str], ...]:
    """Keep the `max_tests` smallest tests (by input + output length), in their original order."""
    if len(tests) <= max_tests:
        return tuple(tests)
    keep = sorted(range(len(tests)), key=lambda i: (len(tests[i][0]) + len(tests[i][1]), i))[:max_tests]
    return tuple(tests[i] for i in sorted(keep))


def _from_deepcoder(config: str, index: int, row: dict[str, Any], max_tests: int) -> Problem | None:
    raw = _json(row["tests"])
    metadata = _json(row.get("metadata") or {}) or {}
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    tests: list[tuple[str, str]] = []
    if isinstance(raw, dict):  # TACO: {"inputs": [...], "outputs": [...], "fn_name"?}
        fn_name = raw.get("fn_name") or fn_name
        for args, out in zip(raw.get("inputs", []), raw.get("outputs", []), strict=False):
            tests.append(_functional_io(args, out) if fn_name else (_as_text(args), _as_text(out)))
    else:
        for test in raw or []:
            kind = test.get("testtype") or test.get("type") or ""
            fn_name = test.get("fn_name") or fn_name
            if kind in ("functional", "function_call") or (fn_name and kind != "stdin" and kind != "stdin_stdout"):
                if kind == "functional":
                    tests.append((_as_text(test["input"]), _as_text(test["output"])))
                else:
                    tests.append(_functional_io(test["input"], test["output"]))
            else:
                tests.append((_as_text(test["input"]), _as_text(test["output"])))
    if not tests:
        return None
    solutions = _json(row.get("solutions") or [])
    solution = solutions[0] if isinstance(solutions, list) and solutions else None
    return Problem(
        pid=f"{config}/{index}",
        question=str(row["problem"]),
        starter_code=str(row.get("starter_code") or ""),
        tests=_select(tests, max_tests),
        fn_name=fn_name,
        solution=solution,
    )


def _private_tests(value: str) -> list[dict[str, Any]]:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return json.loads(pickle.loads(zlib.decompress(base64.b64decode(value.encode()))))


def _from_lite(index: int, row: dict[str, Any], max_tests: int) -> Problem:
    tests = json.loads(row["public_test_cases"]) + _private_tests(row["private_test_cases"])
    metadata = _json(row.get("metadata") or "{}") or {}
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    pairs = [(str(t["input"]), str(t["output"])) for t in tests]
    return Problem(
        pid=f"lcb/{row.get('question_id', index)}",
        question=str(row["question_content"]),
        starter_code=str(row.get("starter_code") or ""),
        tests=_select(pairs, max_tests),
        fn_name=fn_name if tests and tests[0].get("testtype") == "functional" else None,
        solution=None,
    )


def _how_to_get(detail: str) -> str:
    return (
        f"code problems not available ({detail}). Either let `datasets` download DeepCoder from the Hub (`{HUB_ID}`, "
        f"needs network; `huggingface-cli download {HUB_ID} --repo-type dataset --local-dir deepcoder`), or pass "
        "data_dir=<folder> with the Hub layout (<config>/<split>-*.parquet and README.md), or source='lcb_lite' "
        "with data_dir holding LiveCodeBench code_generation_lite test*.jsonl files."
    )


def load_problems(
    split: str,
    *,
    source: str,
    data_dir: str | os.PathLike[str] | None,
    max_tests: int,
    revision: str = "main",
    lite_test_from: str = "2024-08-01",
) -> list[Problem]:
    """The problems of a split.

    Raises:
        ValueError: For an unknown split or source.
        FileNotFoundError: When the data cannot be found, saying how to provide it.
    """
    if split not in ("train", "test"):
        raise ValueError(f"unknown LCB split {split!r}; choose train or test.")
    import datasets

    if source == "lcb_lite":
        if data_dir is None:
            raise FileNotFoundError(_how_to_get("source='lcb_lite' needs data_dir"))
        files = sorted(str(p) for p in Path(data_dir).expanduser().glob("test*.jsonl"))
        if not files:
            raise FileNotFoundError(_how_to_get(f"no test*.jsonl in {data_dir}"))
        rows = list(datasets.load_dataset("json", data_files={"rows": files}, split="rows"))
        chosen = [r for r in rows if (str(r["contest_date"])[:10] >= lite_test_from) == (split == "test")]
        return [_from_lite(i, r, max_tests) for i, r in enumerate(chosen)]
    if source != "deepcoder":
        raise ValueError(f"unknown source {source!r}; choose deepcoder or lcb_lite.")
    configs = [("lcbv5", "test")] if split == "test" else [(c, "train") for c in TRAIN_CONFIGS]
    problems: list[Problem] = []
    for config, hub_split in configs:
        try:
            path = str(Path(data_dir).expanduser()) if data_dir is not None else HUB_ID
            kwargs = {} if data_dir is not None else {"revision": revision}
            dataset = datasets.load_dataset(path, name=config, split=hub_split, **kwargs)
        except (ConnectionError, OSError, ValueError) as exc:
            raise FileNotFoundError(
                _how_to_get(f"loading {config}/{hub_split} failed: {type(exc).__name__}: {exc}")
            ) from exc
        for i, row in enumerate(dataset):
            problem = _from_deepcoder(config, i, row, max_tests)
            if problem is not None:
                problems.append(problem)
    return problems
