"""``vpo-eval``: score a served model on an env in one command (any OpenAI-compatible server).

    vpo-eval --env maze-v1 --base-url http://127.0.0.1:8000/v1 --model NAME --limit 50 --samples 30 --out eval/

Samples with the env profile's evaluation settings (temperature, top-p, token budget, chat-template
options; printed at the start, each overridable), scores every completion with the env (parse once,
score the m candidates) and writes:

- ``OUT/samples.jsonl``: one line per completion: task id, prompt messages, completion text, the
  parsed candidates and their reward vectors (shape (m, d), named by ``reward_names``);
- ``OUT/results.json`` (strict JSON, undefined numbers as null; layout version ``schema_version``):
  pass@k, best@k, E_w[best@k] and the reward-space diversity of the first k candidates for every k the
  pool allows (``ks_not_reported`` names the others and the pool size), the mean rewards, and beside
  every metric its standard error (``standard_errors``; bootstrap over tasks, `BOOTSTRAP_RESAMPLES`
  resamples, a fixed seed: `vpo_core.evaluation.reporting`), the settings and their digest
  (``settings_digest``: sha256 of their canonical JSON, the server's URL left out), package versions
  and the date;
- ``OUT/run.json``: the settings, written before sampling (what ``--resume`` checks).

Nothing is uploaded anywhere: the prompts go to ``--base-url`` and everything else stays in ``--out``.

``--resume`` continues an interrupted evaluation in the same ``--out``: tasks already in
``samples.jsonl`` are not sampled again, but their stored completions are scored again with the env
(stored rewards are never trusted: an edited file cannot change a metric; re-scoring costs what the
first scoring did, which for maze and the text envs is milliseconds, and for LCB's sandbox or a
reward-model server is the honest price: a digest of the rewards would only catch accidents, since
whoever edits the file can recompute it). A resume is refused, in one line, when its settings cannot
be verified: no ``run.json`` beside the samples, other settings (the server's URL may change), a
stored prompt that is not what these settings render, or a damaged file (wrong JSON types, a task
that is not in the split). Needs only the standard library and numpy (vpo-core's base install): the
sampler is `OpenAISampler`'s ``chat`` API.

Chat-template options (maze's profile turns Qwen3's thinking off) go only to a vLLM server, and a
template may pre-fill text the env scores (Qwen3's empty think block) that no answer contains: the
pre-fill is learned from the vLLM server itself (its ``/tokenize`` and ``/detokenize`` endpoints,
`vpo_core.models.prefill`), so a pip user needs neither the checkpoint nor transformers. ``--tokenizer``
takes it from a local tokenizer instead (a server without ``/tokenize``); ``results.json`` records
which (``chat_template_prefill``).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import itertools
import json
import os
import sys
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core import strict_json
from vpo_core.errors import ConfigError, DataFileError, MissingDataError, UserError
from vpo_core.evaluation.reporting import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    RESULTS_SCHEMA_VERSION,
    settings_digest,
    standard_errors,
)

__all__ = ["BOOTSTRAP_RESAMPLES", "RESULTS_SCHEMA_VERSION", "main", "settings_digest"]

KS = (1, 3, 5, 10, 30, 50, 100)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not np.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vpo-eval",
        description="Sample a served model on an env's tasks and write pass@k, best@k, E_w[best@k] and diversity.",
    )
    p.add_argument("--env", required=True, help="env id, e.g. maze-v1 (installed envs: vpo_core.list_envs())")
    p.add_argument("--base-url", required=True, help="OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", default=None, help="served model name (default: the first the server lists)")
    p.add_argument("--api-key", default="EMPTY", help="bearer token (vllm serve without --api-key accepts any)")
    p.add_argument("--out", required=True, help="output folder: results.json and samples.jsonl")
    p.add_argument("--split", default="test", help="task split (default test)")
    p.add_argument("--limit", type=_positive_int, default=None, help="first N tasks of the split (default all)")
    p.add_argument(
        "--samples", type=_positive_int, default=None, help="candidates per task (default: the profile's eval_samples)"
    )
    p.add_argument(
        "--mode",
        choices=("single", "multi"),
        default=None,
        help="prompt mode (default: multi when -m > 1, else single)",
    )
    p.add_argument("-m", "--m", type=_positive_int, default=None, help="answers per completion (default 3 in multi)")
    p.add_argument("--temperature", type=_positive_float, default=None, help="default: the profile's eval temperature")
    p.add_argument("--top-p", type=_positive_float, default=None, help="default: the profile's eval top-p")
    p.add_argument("--max-tokens", type=_positive_int, default=None, help="default: the profile's eval budget")
    p.add_argument("--concurrency", type=_positive_int, default=8, help="requests in flight (default 8)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (task i is sent seed + i)")
    p.add_argument("--timeout", type=_positive_float, default=600.0, help="seconds per request (default 600)")
    p.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword of the env's constructor (repeatable), e.g. --env-option data_dir=/data/musique",
    )
    p.add_argument(
        "--server",
        choices=("auto", "vllm", "other"),
        default="auto",
        help="the server's kind (auto: vLLM if its model list says so); only vLLM takes the env's chat-template "
        "options (e.g. Qwen3 thinking off)",
    )
    p.add_argument(
        "--template-options",
        choices=("profile", "none"),
        default="profile",
        help="chat-template options sent: the env profile's (default; needs a vLLM server) or none (the "
        "server's own template defaults, for other servers)",
    )
    p.add_argument(
        "--tokenizer",
        default=None,
        help="the served model's tokenizer directory: tells what its chat template pre-fills in the assistant "
        "turn (loads transformers). Not needed with vLLM, whose /tokenize endpoint tells it",
    )
    p.add_argument("--resume", action="store_true", help="continue the evaluation in --out")
    return p


def _shown(text: object, limit: int = 300) -> str:
    """Text from the server (or a file) as one safe terminal line: control characters escaped, cut at `limit`."""
    from vpo_core.http_json import for_terminal

    return for_terminal(str(text), limit)


def _env_options(pairs: Sequence[str]) -> dict[str, Any]:
    from vpo_core.cli_config import _yaml_value

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env-option takes KEY=VALUE, got {pair!r} (e.g. --env-option data_dir=/data).")
        out[key] = _yaml_value(raw)
    return out


_RECORD_FIX = "repair or delete that line (its task is then sampled again), or start again in another --out"


def _record_problem(record: Any, per_task: int) -> str | None:
    """What is wrong with one line of ``samples.jsonl`` as `_scored_task` writes it, or None."""
    if not isinstance(record, dict):
        return "is not a JSON object"
    if not isinstance(record.get("task_id"), str):
        return "has 'task_id' that is not text ('task_id' must be text)"
    sample = record.get("sample")
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample < per_task:
        return f"has 'sample' {_shown(json.dumps(sample))[:40]} ('sample' must be an integer from 0 to {per_task - 1})"
    if not isinstance(record.get("completion"), str):
        return "has no completion text ('completion' must be text)"
    return None


def _read_done(path: Path, per_task: int, task_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Completed tasks of an earlier run (task id -> its records in sample order); a task cut short is sampled again.

    Only the last line may be cut (an interruption while appending; lines are written whole tasks at a
    time and flushed). Every other line must be a record as `_scored_task` writes it.

    Raises:
        DataFileError: For a file that cannot be read, a line that is not JSON (but the cut last one),
            a record of the wrong types, a task that is not in this evaluation, or a sample twice.
    """
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"--resume: cannot read {path} ({exc}); start again in another --out.") from None
    lines = text.split("\n")
    done: dict[str, dict[int, dict[str, Any]]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting a RecursionError
            if number == len(lines):  # the last line, without its newline: cut by an interruption
                break
            raise DataFileError(f"--resume: {path} line {number} is not JSON; {_RECORD_FIX}.") from None
        problem = _record_problem(record, per_task)
        if problem is not None:
            raise DataFileError(f"--resume: {path} line {number} {problem}; {_RECORD_FIX}.")
        task_id, sample = record["task_id"], record["sample"]
        if task_id not in task_ids:
            raise DataFileError(
                f"--resume: {path} line {number} is of task {_shown(task_id)!r}, which is not one of this "
                f"evaluation's {len(task_ids)} tasks; {_RECORD_FIX}."
            )
        if sample in done.setdefault(task_id, {}):
            raise DataFileError(f"--resume: {path} line {number} repeats sample {sample} of {task_id}; {_RECORD_FIX}.")
        done[task_id][sample] = record
    return {k: [v[j] for j in range(per_task)] for k, v in done.items() if len(v) == per_task}


def _rescored(
    env: Any, task: Any, records: list[dict[str, Any]], messages: Any, settings: dict[str, Any], path: Path
) -> tuple[list[dict[str, Any]], int]:
    """A task's stored records with their completions scored again by the env.

    Returns:
        (the records rebuilt from their completion text with the env's candidates and rewards, how many
        stored records had other candidates or rewards).

    Raises:
        DataFileError: If a record's prompt is not what these settings render for the task.
    """
    prompt = [dict(x) for x in messages]
    fresh = []
    changed = 0
    names, own = list(env.reward_spec.names), list(env.spec_for(task).names)
    for record in records:
        if record.get("prompt") != prompt:
            raise DataFileError(
                f"--resume: {path} holds task {task.id} sampled with another prompt than --mode "
                f"{settings['mode']} -m {settings['m']} renders (another mode, m or env version); start again "
                "in another --out."
            )
        candidates, rewards, error = _score(env, task, record["completion"], settings["mode"], settings["m"])
        rows = strict_json.to_strict(rewards)
        changed += record.get("rewards") != rows or record.get("candidates") != strict_json.to_strict(candidates)
        fresh.append(  # the record as `_scored_task` writes it: nothing but the completion text is kept
            {
                "task_id": task.id,
                "sample": record["sample"],
                "prompt": prompt,
                "completion": record["completion"],
                "candidates": candidates,
                "rewards": rows,
                "reward_names": own if len(own) != len(names) else names,
                "error": error,
            }
        )
    return [strict_json.to_strict(r) for r in fresh], changed


def _score(env: Any, task: Any, text: str, mode: str, m: int) -> tuple[list[dict[str, Any]], Any, str | None]:
    """The env's one scoring step: (candidates as JSON, rewards (m, d), None).

    Parsers are total and rewards are defined for every candidate (the env protocol), so an exception
    here is a bug of the env and stops the evaluation rather than becoming a silent zero.
    """
    scored = env.score_completion(task, text, mode=mode, m=m)
    rewards = np.asarray(scored.rewards, dtype=np.float64).reshape(m, -1)
    rows = [
        {"index": c.index, "text": c.text, "answer": _jsonable(c.answer), "error": c.error} for c in scored.candidates
    ]
    return rows, rewards, None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(strict_json.to_strict(value))
    except (TypeError, ValueError):
        return repr(value)
    return strict_json.to_strict(value)


def _diversity_at_k(pool: Any, ks: Sequence[int]) -> dict[str, float]:
    """Reward-space diversity of the first k candidates (generation order) of one task's pool, shape (n, m, d)."""
    from vpo_core.evaluation import MetricName
    from vpo_core.metrics import reward_diversity

    flat = pool.reshape(-1, pool.shape[-1])
    return {MetricName("diversity", k): reward_diversity(flat[:k]) for k in ks}


def _settings(args: argparse.Namespace, env_id: str, options: dict[str, Any], env: Any, n_tasks: int) -> dict[str, Any]:
    """What ``run.json`` records (the profile's evaluation settings where an option is not given)."""
    profile = env.profile
    m = 1 if args.mode == "single" else (args.m or 3)
    per_task = max(1, (args.samples or profile.eval_samples) // m)
    return {
        "env": env_id,
        "env_options": options,
        "split": args.split,
        "tasks": n_tasks,
        "mode": args.mode,
        "m": m,
        "samples": per_task * m,
        "completions_per_task": per_task,
        "temperature": float(args.temperature if args.temperature is not None else profile.eval.temperature),
        "top_p": float(args.top_p if args.top_p is not None else profile.eval.top_p),
        "max_tokens": args.max_tokens or profile.eval.max_new_tokens(args.mode, m),
        "chat_template_kwargs": dict(profile.chat_template_kwargs) if args.template_options == "profile" else {},
        "seed": args.seed,
        "base_url": args.base_url,
    }


def _read_run(run_file: Path) -> dict[str, Any]:
    """The settings an earlier evaluation recorded in ``run.json``.

    Raises:
        DataFileError: If it cannot be read, is not JSON or not a JSON object.
    """
    fix = "start again in another --out (or delete the folder's samples.jsonl and run.json)"
    try:
        previous = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"--resume: cannot read {run_file} ({exc}); {fix}.") from None
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting a RecursionError
        raise DataFileError(f"--resume: {run_file} is not JSON, so its settings cannot be verified; {fix}.") from None
    if not isinstance(previous, dict):
        raise DataFileError(
            f"--resume: {run_file} is not a JSON object ({type(previous).__name__}), so its settings cannot be "
            f"verified; {fix}."
        )
    return previous


def _check_resume(previous: dict[str, Any], settings: dict[str, Any], run_file: Path) -> None:
    """Refuse to resume an evaluation made with other settings (the server's URL may change).

    Raises:
        ConfigError: Naming the settings that differ, as recorded and as now.
    """
    keys = [k for k in dict.fromkeys([*settings, *previous]) if k != "base_url"]
    changed = [k for k in keys if strict_json.to_strict(previous.get(k)) != strict_json.to_strict(settings.get(k))]
    if changed:
        shown = "; ".join(
            f"{_shown(k, 40)}: {_shown(json.dumps(previous.get(k)), 60)} there, {_shown(json.dumps(settings.get(k)), 60)} now"
            for k in changed[:4]
        )
        more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
        raise ConfigError(
            f"--resume: {run_file.parent} was made with other settings (its {run_file.name}: {shown}{more}); repeat "
            "them or use another --out."
        )


def _check_out(out: Path) -> None:
    """Refuse an --out that cannot hold the evaluation, before anything is sampled (nothing is created here).

    Raises:
        DataFileError: If --out or a folder above it is a file, or the nearest existing one is not writable.
    """
    for folder in (out, *out.parents):
        if not folder.exists():
            continue
        if not folder.is_dir():
            where = "is a file" if folder == out else f"is under {folder}, which is a file"
            raise DataFileError(f"--out {out} {where}, not a folder; give a folder path for the evaluation.")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise DataFileError(f"--out {out}: {folder} is not writable; give a folder you can write to.")
        return


def _write(path: Path, text: str, out: Path) -> None:
    """Write `text` to `path` (through a temporary file, so an interruption leaves the old file whole).

    Raises:
        DataFileError: If --out cannot be written (permissions, a full or read-only disk).
    """
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise DataFileError(f"--out {out}: cannot write {path.name} ({exc}); give a folder you can write to.") from None


def _requested(sampler: Any, env: Any, tasks: Sequence[Any], i: int, settings: dict[str, Any]) -> tuple[Any, list[str]]:
    """Task `i`'s prompt messages and its completions (one request, seeded by its position: resumes sample the same).

    Runs on a worker thread (``--concurrency`` of them are in flight); it only talks to the server.
    """
    messages = env.render_prompt(tasks[i], mode=settings["mode"], m=settings["m"])
    texts = sampler.sample(
        [sampler.prompt_text(messages)],
        num_samples=settings["completions_per_task"],
        max_new_tokens=settings["max_tokens"],
        temperature=settings["temperature"],
        top_p=settings["top_p"],
        seed=settings["seed"] + i,
    )
    return messages, list(texts)


def _scored_task(
    env: Any, tasks: Sequence[Any], i: int, messages: Any, texts: Sequence[str], settings: dict[str, Any]
) -> list[dict[str, Any]]:
    """Score task `i`'s completions (on the calling thread, in task order).

    Returns:
        One record per completion (``samples.jsonl``'s lines): rewards of shape (m, d) each.
    """
    mode, m = settings["mode"], settings["m"]
    task = tasks[i]
    names = list(env.reward_spec.names)
    own = list(env.spec_for(task).names)
    records = []
    for j, text in enumerate(texts):
        candidates, rewards, error = _score(env, task, text, mode, m)
        records.append(
            {
                "task_id": task.id,
                "sample": j,
                "prompt": [dict(x) for x in messages],
                "completion": text,
                "candidates": candidates,
                "rewards": rewards,
                "reward_names": own if len(own) != len(names) else names,
                "error": error,
            }
        )
    return records


def _sample_all(
    sampler: Any,
    env: Any,
    tasks: Sequence[Any],
    settings: dict[str, Any],
    samples_file: Path,
    *,
    resume: bool,
    batch: int,
) -> dict[str, list[dict[str, Any]]]:
    """Sample every task not yet in `samples_file` (appending as it goes, `batch` tasks per progress line).

    On resume the stored tasks' completions are scored again (`_rescored`) and the file is rewritten
    with the env's rewards, whole tasks only (a task cut short is sampled once more, not twice).

    Returns:
        Task id -> its records.

    Raises:
        DataFileError: A damaged samples file (`_read_done`, `_rescored`) or an --out that cannot be written.
    """
    per_task = settings["completions_per_task"]
    out = samples_file.parent
    done: dict[str, list[dict[str, Any]]] = {}
    if resume:
        stored = _read_done(samples_file, per_task, {t.id for t in tasks})
        changed = 0
        for task in tasks:
            if task.id in stored:
                messages = env.render_prompt(task, mode=settings["mode"], m=settings["m"])
                done[task.id], differ = _rescored(env, task, stored[task.id], messages, settings, samples_file)
                changed += differ
        if done:
            _log(
                f"resuming: {len(done)} of {len(tasks)} tasks already sampled in {samples_file}; their "
                f"{len(done) * per_task} completions were scored again with the env"
            )
        if changed:
            _log(
                f"warning: {changed} stored completion(s) had candidates or rewards that differ from the env's score "
                "of their text; the env's are used and written back"
            )
    if samples_file.exists() or done:
        _write(samples_file, "".join(strict_json.dumps(r) + "\n" for rs in done.values() for r in rs), out)
    todo = [i for i, t in enumerate(tasks) if t.id not in done]
    finished = len(tasks) - len(todo)
    try:
        sink = samples_file.open("a", encoding="utf-8")
    except OSError as exc:
        raise DataFileError(
            f"--out {out}: cannot write {samples_file.name} ({exc}); give a folder you can write to."
        ) from None
    # A sliding window of `batch` requests in flight (threads only wait on the server); the answers are taken
    # in task order, scored and appended here, so the file is always a prefix of the task order and an error
    # stops at its task (the ones before it are written: --resume continues from there).
    in_flight: collections.deque[tuple[int, Future[tuple[Any, list[str]]]]] = collections.deque()
    upcoming = iter(todo)
    with sink, ThreadPoolExecutor(max_workers=batch) as pool:
        try:
            for i in itertools.islice(upcoming, batch):
                in_flight.append((i, pool.submit(_requested, sampler, env, tasks, i, settings)))
            while in_flight:
                i, answer = in_flight.popleft()
                messages, texts = answer.result()
                following = next(upcoming, None)
                if following is not None:
                    in_flight.append((following, pool.submit(_requested, sampler, env, tasks, following, settings)))
                records = _scored_task(env, tasks, i, messages, texts, settings)
                done[tasks[i].id] = [strict_json.to_strict(r) for r in records]
                try:
                    sink.write("".join(strict_json.dumps(r) + "\n" for r in records))
                    sink.flush()
                except OSError as exc:
                    raise DataFileError(
                        f"--out {out}: cannot write {samples_file.name} ({exc}); free space or give another folder, "
                        "then --resume."
                    ) from None
                finished += 1
                if finished % batch == 0 or not in_flight:
                    _log(f"[{finished}/{len(tasks)} tasks] {finished * per_task} completions sampled and scored")
        finally:
            for _, pending in in_flight:
                pending.cancel()
    return done


def _pools(tasks: Sequence[Any], done: dict[str, list[dict[str, Any]]], m: int) -> tuple[list[Any], int]:
    """Each task's pool, shape (n, m, d_t) (rows zero-padded to the task's widest), and the unscorable count."""
    pools = []
    errors = 0
    for task in tasks:
        records = sorted(done[task.id], key=lambda r: r["sample"])
        errors += sum(1 for r in records if r.get("error"))
        width = max(len(row) for r in records for row in r["rewards"]) if records else 0
        pool = np.zeros((len(records), m, width))
        for j, r in enumerate(records):
            rows = np.asarray(r["rewards"], dtype=np.float64).reshape(m, -1)
            pool[j, :, : rows.shape[1]] = rows
        pools.append(pool)
    return pools, errors


def _prefill_note(sampler: Any) -> str:
    """The log's words on the template's pre-fill (added before every completion), if there is one."""
    source = {"server": "learned from the server's /tokenize", "tokenizer": "from --tokenizer"}
    if sampler.prefill_source not in source:
        return ""
    return f"; the template pre-fills {_shown(repr(sampler.prefill))} ({source[sampler.prefill_source]})"


def _make_env(env_id: str, options: dict[str, Any]) -> Any:
    """`vpo_core.make`, with the constructor's refusal of an ``--env-option`` reported as the user's error.

    Raises:
        ConfigError: An ``--env-option`` value the env's constructor refuses (its message says which).
    """
    import vpo_core

    try:
        return vpo_core.make(env_id, **options)
    except UserError:
        raise
    except (KeyError, ValueError) as exc:  # the constructor validates the user's --env-option values
        raise ConfigError(f"--env {env_id}: {exc.args[0] if exc.args else exc}") from exc


def _split_tasks(env: Any, env_id: str, split: str) -> list[Any]:
    """The tasks of `split`, with an unknown split or missing data reported as the user's error.

    Raises:
        ConfigError: A split the env does not have.
        MissingDataError: The env's data files are not there (the message says how to get them).
    """
    try:
        return list(env.tasks(split))
    except UserError:
        raise
    except FileNotFoundError as exc:
        raise MissingDataError(str(exc)) from exc
    except (KeyError, ValueError) as exc:  # the env's check of the split name
        raise ConfigError(f"--split {split} of {env_id}: {exc.args[0] if exc.args else exc}") from exc


def _ks(size: int) -> tuple[list[int], list[int]]:
    """The k of `KS` reported for pools of `size` candidates, and the ones left out."""
    return [k for k in KS if k <= size], [k for k in KS if k > size]


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Run the evaluation of parsed `args`; returns what ``results.json`` holds.

    Raises:
        UserError: Bad input, in one line: `ConfigError` (env id, options, resume with other settings),
            `DataFileError` (an --out that cannot be used, a resume that cannot be verified, damaged files).
        vpo_core.models.openai.EndpointError: The server cannot be used.
    """
    from vpo_core.env_options import check_env
    from vpo_core.evaluation import MetricName, package_versions, pool_summary, task_pool_metrics
    from vpo_core.models.openai import OpenAISampler

    try:
        env_id, options = check_env(args.env, _env_options(args.env_option), warn=_log)
    except (KeyError, ValueError) as exc:  # the registry's and the options' checks of what the user wrote
        if isinstance(exc, UserError):
            raise
        raise ConfigError(exc.args[0] if exc.args else str(exc)) from exc
    if args.mode is None:
        args.mode = "multi" if (args.m or 1) > 1 else "single"
    if args.mode == "single" and args.m not in (None, 1):
        raise ConfigError(f"--mode single writes one answer per completion; drop -m {args.m} or pass --mode multi.")
    env = _make_env(env_id, options)
    tasks = _split_tasks(env, env_id, args.split)[: args.limit]
    if not tasks:
        raise ConfigError(f"{env_id} has no tasks in split {args.split!r}.")
    settings = _settings(args, env_id, options, env, len(tasks))
    m, per_task = settings["m"], settings["completions_per_task"]
    out = Path(args.out)
    samples_file, run_file = out / "samples.jsonl", out / "run.json"
    _check_out(out)
    if samples_file.exists() and not args.resume:
        raise DataFileError(f"{out} holds an evaluation; pass --resume to continue it, or another --out.")
    previous = None
    if args.resume and run_file.exists():
        previous = _read_run(run_file)
    elif args.resume and samples_file.exists():
        raise DataFileError(
            f"--resume: {out} has samples.jsonl but no run.json, so the settings its samples were made with cannot "
            "be verified; start again in another --out (or delete its samples.jsonl)."
        )
    sampler = OpenAISampler(
        args.base_url,
        model=args.model,
        api_key=args.api_key,
        chat_template_kwargs=settings["chat_template_kwargs"],
        timeout_s=args.timeout,
        max_workers=args.concurrency,
        server=args.server,
        tokenizer=args.tokenizer,
    )
    settings["model"] = sampler.model
    if previous is not None:
        _check_resume(previous, settings, run_file)
    _write(run_file, strict_json.dumps(settings, indent=2) + "\n", out)
    _log(
        f"vpo-eval: {_shown(sampler.model)} on {env_id} {args.split}, {len(tasks)} tasks x {per_task * m} candidates "
        f"({args.mode}, m={m}: {per_task} completion(s) per task); temperature {settings['temperature']}, "
        f"top-p {settings['top_p']}, max_tokens {settings['max_tokens']}, chat template {settings['chat_template_kwargs']} "
        f"(defaults from {env_id}'s evaluation profile){_prefill_note(sampler)}"
    )
    done = _sample_all(sampler, env, tasks, settings, samples_file, resume=args.resume, batch=max(1, args.concurrency))
    pools, errors = _pools(tasks, done, m)
    size = per_task * m
    ks, left_out = _ks(size)
    if left_out:
        _log(
            f"best@k, pass@k, E_w[best@k] and diversity@k for k = {', '.join(map(str, left_out))} are not reported: "
            f"each task's pool has {size} candidates; pass --samples {max(left_out)} to report them."
        )
    per_task_rows = [task_pool_metrics(env, t, p, mode=args.mode, ks=ks) for t, p in zip(tasks, pools, strict=True)]
    for task_row, pool in zip(per_task_rows, pools, strict=True):
        task_row.update(_diversity_at_k(pool, ks))
    metrics = pool_summary(env, tasks, pools, per_task_rows, mode=args.mode, ks=ks)
    errors_se = standard_errors(env, tasks, pools, per_task_rows, metrics)
    per_k: dict[str, dict[str, float | None]] = {}
    for k in ks:  # each statistic at k with its standard error beside it
        per_k[str(k)] = {}
        for stat in ("best", "pass", "E_w[best]", "diversity"):
            per_k[str(k)][stat] = metrics.get(MetricName(stat, k))
            per_k[str(k)][f"{stat}_se"] = errors_se.get(MetricName(stat, k))
    results = {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "env": env_id,
        "model": sampler.model,
        "metrics": metrics,
        "standard_errors": errors_se,
        "bootstrap": {"over": "tasks", "resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED},
        "per_k": per_k,
        "ks_not_reported": {"ks": left_out, "pool_size": size},
        "settings": settings,
        "settings_digest": settings_digest(settings),
        "chat_template_prefill": {"text": sampler.prefill, "source": sampler.prefill_source},
        "unscorable_completions": errors,
        "missing_completions": int(getattr(sampler, "bad_completions", 0)),
        "versions": package_versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    _write(out / "results.json", strict_json.dumps(results, indent=2) + "\n", out)
    return results


def _with_error(metrics: dict[str, Any], errors: dict[str, Any], key: str) -> str:
    """``0.500 ± 0.050`` (the standard error left out where it is undefined)."""
    value, se = metrics.get(key), errors.get(key)
    if not isinstance(value, float) or not np.isfinite(value):
        return "-"
    return f"{value:.3f} ± {se:.3f}" if isinstance(se, float) and np.isfinite(se) else f"{value:.3f}"


def _report(results: dict[str, Any], out: Path) -> str:
    """The printed summary: the headline metrics and a per-k table, each value with its standard error."""
    metrics, errors = results["metrics"], results["standard_errors"]
    shown = ", ".join(
        f"{key} {_with_error(metrics, errors, key)}"
        for key in ("best@1", "best@5", "pass@5", "E_w[best@5]", "diversity@5", "mean_w_star")
        if isinstance(metrics.get(key), float)
    )
    settings = results["settings"]
    lines = [
        f"{results['env']} · {_shown(results['model'])}: {shown}",
        f"{settings['tasks']} tasks x {settings['samples']} candidates; ± is the standard error from "
        f"{results['bootstrap']['resamples']} bootstrap resamples over tasks (seed {results['bootstrap']['seed']})",
        "",
        "| k | best@k | pass@k | E_w[best@k] | diversity@k |",
        "|---|---|---|---|---|",
    ]
    for k in results["per_k"]:
        names = (f"best@{k}", f"pass@{k}", f"E_w[best@{k}]", f"diversity@{k}")
        lines.append(f"| {k} | " + " | ".join(_with_error(metrics, errors, n) for n in names) + " |")
    lines += [
        "",
        f"wrote {out / 'results.json'} and {out / 'samples.jsonl'} (settings digest {results['settings_digest'][:12]})",
        f"nothing is uploaded; results stay in {out}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``vpo-eval`` console command: 0 on success, 2 on bad input, 1 when the server cannot be used."""
    from vpo_core.models.openai import EndpointError

    args = _parser().parse_args(argv)
    try:
        results = evaluate(args)
    except EndpointError as exc:
        _log(f"error: {_shown(exc, 4000)}")
        return 1
    except UserError as exc:
        _log(f"error: {_shown(exc, 4000)}")
        return 2
    print(_report(results, Path(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
