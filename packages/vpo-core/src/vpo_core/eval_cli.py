"""``vpo-eval``: score a served model on an env in one command (any OpenAI-compatible server).

    vpo-eval --env maze-v1 --base-url http://127.0.0.1:8000/v1 --model NAME --limit 50 --samples 30 --out eval/

Samples with the env profile's evaluation settings (temperature, top-p, token budget, chat-template
options; printed at the start, each overridable), scores every completion with the env (parse once,
score the m candidates) and writes:

- ``OUT/samples.jsonl``: one line per completion: task id, prompt messages, completion text, the
  parsed candidates and their reward vectors (shape (m, d), named by ``reward_names``);
- ``OUT/results.json`` (strict JSON, undefined numbers as null): pass@k, best@k, E_w[best@k] and the
  reward-space diversity of the first k candidates for every k the pool allows, the mean rewards, the
  settings, package versions and the date.

``--resume`` continues an interrupted evaluation in the same ``--out`` (tasks already in
``samples.jsonl`` are not sampled again; the settings must be the same). Needs only the standard
library and numpy (vpo-core's base install): the sampler is `OpenAISampler`'s ``chat`` API.

Chat-template options (maze's profile turns Qwen3's thinking off) go only to a vLLM server, and a
template may pre-fill text the env scores (Qwen3's empty think block) that no answer contains: the
pre-fill is learned from the vLLM server itself (its ``/tokenize`` and ``/detokenize`` endpoints,
`vpo_core.chat_prefill`), so a pip user needs neither the checkpoint nor transformers. ``--tokenizer``
takes it from a local tokenizer instead (a server without ``/tokenize``); ``results.json`` records
which (``chat_template_prefill``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core import strict_json

__all__ = ["main"]

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


def _env_options(pairs: Sequence[str]) -> dict[str, Any]:
    from vpo_core.cli_config import ConfigError, _yaml_value

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env-option takes KEY=VALUE, got {pair!r} (e.g. --env-option data_dir=/data).")
        out[key] = _yaml_value(raw)
    return out


def _read_done(path: Path, n_per_task: int) -> dict[str, list[dict[str, Any]]]:
    """Completed tasks of an earlier run (task id -> its records); a task cut short is sampled again."""
    done: dict[str, list[dict[str, Any]]] = {}
    if not path.exists():
        return done
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by an interruption
        if isinstance(record, dict) and isinstance(record.get("task_id"), str):
            done.setdefault(record["task_id"], []).append(record)
    return {k: v for k, v in done.items() if len(v) == n_per_task}


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


def _diversity_at_k(pools: list[Any], ks: Sequence[int]) -> dict[str, float]:
    """Reward-space diversity of the first k candidates (generation order) of each task, averaged."""
    from vpo_core.evaluation import MetricName
    from vpo_core.metrics import reward_diversity

    out: dict[str, float] = {}
    for k in ks:
        values = [reward_diversity(p.reshape(-1, p.shape[-1])[:k]) for p in pools]
        out[MetricName("diversity", k)] = float(np.mean(values))
    return out


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
        "temperature": args.temperature if args.temperature is not None else profile.eval.temperature,
        "top_p": args.top_p if args.top_p is not None else profile.eval.top_p,
        "max_tokens": args.max_tokens or profile.eval.max_new_tokens(args.mode, m),
        "chat_template_kwargs": dict(profile.chat_template_kwargs) if args.template_options == "profile" else {},
        "seed": args.seed,
        "base_url": args.base_url,
    }


def _check_resume(run_file: Path, settings: dict[str, Any], out: Path) -> None:
    """Refuse to resume an evaluation made with other settings (the server's URL may change)."""
    previous = json.loads(run_file.read_text())
    changed = {k: (previous.get(k), v) for k, v in settings.items() if k != "base_url" and previous.get(k) != v}
    if changed:
        raise ValueError(f"--resume: {out} was made with other settings {changed}; repeat them or use another --out.")


def _sample_task(
    sampler: Any, env: Any, tasks: Sequence[Any], i: int, messages: Any, settings: dict[str, Any]
) -> list[dict[str, Any]]:
    """Sample and score task `i` (one request, seeded by its position: resumes sample the same).

    Returns:
        One record per completion (``samples.jsonl``'s lines): rewards of shape (m, d) each.
    """
    mode, m, per_task = settings["mode"], settings["m"], settings["completions_per_task"]
    texts = sampler.sample(
        [sampler.prompt_text(messages)],
        num_samples=per_task,
        max_new_tokens=settings["max_tokens"],
        temperature=settings["temperature"],
        top_p=settings["top_p"],
        seed=settings["seed"] + i,
    )
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

    Returns:
        Task id -> its records.
    """
    per_task = settings["completions_per_task"]
    done = _read_done(samples_file, per_task) if resume else {}
    if done:
        _log(f"resuming: {len(done)} of {len(tasks)} tasks already sampled in {samples_file}")
    if samples_file.exists():  # keep only whole tasks, so a task cut short is sampled once more, not twice
        kept = [json.dumps(r) for rs in done.values() for r in rs]
        samples_file.write_text("".join(line + "\n" for line in kept))
    todo = [i for i, t in enumerate(tasks) if t.id not in done]
    finished = len(tasks) - len(todo)
    with samples_file.open("a") as sink:
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            for i in chunk:
                messages = env.render_prompt(tasks[i], mode=settings["mode"], m=settings["m"])
                records = _sample_task(sampler, env, tasks, i, messages, settings)
                done[tasks[i].id] = [strict_json.to_strict(r) for r in records]
                sink.write("".join(strict_json.dumps(r) + "\n" for r in records))
                sink.flush()
            finished += len(chunk)
            _log(f"[{finished}/{len(tasks)} tasks] {finished * per_task} completions sampled and scored")
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
    return f"; the template pre-fills {sampler.prefill!r} ({source[sampler.prefill_source]})"


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Run the evaluation of parsed `args`; returns what ``results.json`` holds.

    Raises:
        ValueError, KeyError, FileNotFoundError: Bad input (env id, options, output folder, resume mismatch).
        vpo_core.adapters.local.openai_sampler.EndpointError: The server cannot be used.
    """
    import vpo_core
    from vpo_core.adapters.local.openai_sampler import OpenAISampler
    from vpo_core.env_options import check_env
    from vpo_core.evaluation import MetricName, package_versions, pool_summary

    env_id, options = check_env(args.env, _env_options(args.env_option), warn=_log)
    if args.mode is None:
        args.mode = "multi" if (args.m or 1) > 1 else "single"
    if args.mode == "single" and args.m not in (None, 1):
        raise ValueError(f"--mode single writes one answer per completion; drop -m {args.m} or pass --mode multi.")
    env = vpo_core.make(env_id, **options)
    tasks = list(env.tasks(args.split))[: args.limit]
    if not tasks:
        raise ValueError(f"{env_id} has no tasks in split {args.split!r}.")
    settings = _settings(args, env_id, options, env, len(tasks))
    m, per_task = settings["m"], settings["completions_per_task"]
    out = Path(args.out)
    samples_file, run_file = out / "samples.jsonl", out / "run.json"
    if samples_file.exists() and not args.resume:
        raise FileExistsError(f"{out} holds an evaluation; pass --resume to continue it, or another --out.")
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
    if args.resume and run_file.exists():
        _check_resume(run_file, settings, out)
    out.mkdir(parents=True, exist_ok=True)
    strict_json.write(run_file, settings)
    _log(
        f"vpo-eval: {sampler.model} on {env_id} {args.split}, {len(tasks)} tasks x {per_task * m} candidates "
        f"({args.mode}, m={m}: {per_task} completion(s) per task); temperature {settings['temperature']}, "
        f"top-p {settings['top_p']}, max_tokens {settings['max_tokens']}, chat template {settings['chat_template_kwargs']} "
        f"(defaults from {env_id}'s evaluation profile){_prefill_note(sampler)}"
    )
    done = _sample_all(sampler, env, tasks, settings, samples_file, resume=args.resume, batch=max(1, args.concurrency))
    pools, errors = _pools(tasks, done, m)
    ks = [k for k in KS if k <= per_task * m]
    metrics = pool_summary(env, tasks, pools, mode=args.mode, ks=ks)
    metrics.update(_diversity_at_k(pools, ks))
    stats = {"best": "best", "pass": "pass", "E_w[best]": "E_w[best]", "diversity": "diversity"}
    results = {
        "env": env_id,
        "model": sampler.model,
        "metrics": metrics,
        "per_k": {str(k): {key: metrics.get(MetricName(stat, k)) for key, stat in stats.items()} for k in ks},
        "settings": settings,
        "chat_template_prefill": {"text": sampler.prefill, "source": sampler.prefill_source},
        "unscorable_completions": errors,
        "missing_completions": int(getattr(sampler, "bad_completions", 0)),
        "versions": package_versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    strict_json.write(out / "results.json", results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """The ``vpo-eval`` console command: 0 on success, 2 on bad input, 1 when the server cannot be used."""
    from vpo_core.adapters.local.openai_sampler import EndpointError
    from vpo_core.cli_config import ConfigError

    args = _parser().parse_args(argv)
    try:
        results = evaluate(args)
    except EndpointError as exc:
        _log(f"error: {exc}")
        return 1
    except (ConfigError, ValueError, KeyError, FileNotFoundError, FileExistsError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        _log(f"error: {message}")
        return 2
    metrics = results["metrics"]
    shown = ", ".join(
        f"{key} {metrics[key]:.3f}"
        for key in ("best@1", "best@5", "pass@5", "E_w[best@5]", "diversity@5", "mean_w_star")
        if isinstance(metrics.get(key), float)
    )
    print(f"{results['env']} · {results['model']}: {shown}")
    print(f"wrote {Path(args.out) / 'results.json'} and {Path(args.out) / 'samples.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
