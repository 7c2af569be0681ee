"""The evaluation command: sample a policy's candidate pools on an env's split and write comparable results.

    vpo eval env=maze-v1 base_url=http://127.0.0.1:8000/v1 tasks=50 samples=30 out=eval/
    uv run vpo eval env=maze-v1 checkpoints=runs/maze-v1-grpo-seed0,runs/maze-v1-vpo-seed0
    uv run vpo eval env=<env-id> checkpoints=path/to/hf_model method=vpo env.data_dir=/path/to/data

``vpo eval``, ``vpo-eval`` (`vpo_engines.cli.evaluate`), ``apps/evaluate.py`` and ``python -m vpo_engines.local
evaluate`` are this one command.
The policy is sampled by a backend (``backend=``): ``openai`` (any OpenAI-compatible server at
``base_url=``, e.g. ``vllm serve``; needs only the base install, numpy), ``transformers`` (local
checkpoints on ``device=``) or ``vllm`` (local checkpoints in-process on a CUDA GPU); ``auto`` takes
``openai`` with ``base_url=``, else vLLM where it is installed and a GPU is present, else transformers.
A checkpoint is a run directory of ``vpo train`` (its config names the method, hence mode, m and the
goal suffix; ``dir@init`` is its warm start, ``dir@stepN`` a snapshot kept by ``keep_steps=``) or a
Hugging Face model directory (pass ``method=``, or ``mode=`` and ``m=``; without them: multi mode when
m > 1, else single). A goal-conditioned method is evaluated twice, conditioned on w* and on one
w ~ Dir(1) per task (``conditioning=``): each (checkpoint, conditioning) is one row.

Sampling follows the env profile's final evaluation (``env.profile.eval``: temperature, top-p, the
token budget of the mode and m, or a run directory's own budget, never past the model's positions;
``eval_samples`` candidates per task and ``eval_seeds`` seeds) and its chat-template options; every option
overrides it. Each completion is scored with the env's one scoring step (``score_completion``); an
exception there is a bug of the env and stops the run (nothing silently becomes 0). A completion the
server did not return is scored as the template's pre-fill alone and counted (``missing_completions``).

It writes to ``out=`` (default ``runs/eval/<name or UTC time>``; nothing is uploaded anywhere):

- ``results.json``: one versioned schema (`SCHEMA_VERSION`; documented in docs/evaluation.md):
  the env, split and tasks, package versions, the date and the bootstrap that gives the standard
  errors, and per row its metrics with the standard error of each (``metrics``, ``standard_errors``:
  same keys), the k left out (``ks_not_reported``), the best@k curve, its settings and their digest
  (``settings_digest``), the chat-template pre-fill, its pool file and its sample log;
- ``pool_<row>.npy`` with ``pool_<row>.json``: the rewards, shape (tasks, completions, m, d), in the shared
  pool format (`vpo_core.evaluation.pool_file`) that apps/diagnose.py, vpo-search and the experiment
  summaries read; always written;
- ``samples_<row>.jsonl`` with ``log_samples=true``: one line per completion (task id, sample index,
  prompt messages, the whole assistant turn, parsed candidates, reward rows (m, d) and their names);
- ``run.json`` (each row's settings, written before sampling: what ``resume=true`` checks), ``table.md``
  (the paper's table) and ``best_at_k.png`` (where matplotlib is installed).

``resume=true`` (which logs samples) continues an interrupted evaluation in the same ``out=``: tasks in a
row's sample log are not sampled again, but their stored completions are scored again with the env (a
stored reward is never trusted); it is refused in one line when the settings cannot be verified (no
``run.json``, other settings, a stored prompt these settings do not render, a damaged line). Server
backends keep ``concurrency=`` requests in flight and write in task order.

Errors: a problem with the input (`vpo_core.errors.UserError`: an option, a file, missing data) is one
line and exit status 2, a server that cannot be used (`ServerError`) one line and status 1; anything
else (an env's scoring bug included) keeps its traceback.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vpo_core import strict_json
from vpo_core.cli_config import HelpRequested, option, parse_config
from vpo_core.errors import ConfigError, DataFileError, MissingDataError, RunDirError, ServerError, UserError
from vpo_core.evaluation.metrics import KS, markdown_table, pool_curve, pool_summary, task_pool_metrics
from vpo_core.evaluation.pool_file import new_pool, package_versions, save_pool
from vpo_core.evaluation.reporting import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    NOT_DEFINING,
    RESULTS_SCHEMA_VERSION,
    settings_digest,
    standard_errors,
)
from vpo_core.registry import DEFAULT_ENV
from vpo_core.sampling_settings import SamplingSettings

__all__ = ["SCHEMA_VERSION", "EvalConfig", "evaluate", "main"]

SCHEMA_VERSION = RESULTS_SCHEMA_VERSION


@dataclass
class EvalConfig:
    """Options of the evaluation command (None: the env profile's value)."""

    env: str = option(DEFAULT_ENV, "env id (vpo_core.list_envs())")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        help="env constructor options", default_factory=dict
    )
    split: str = option("test", "task split")
    tasks: int | None = option(None, "evaluate the first N tasks of the split (default: all)")
    backend: Literal["auto", "openai", "transformers", "vllm"] = option(
        "auto", "openai (a server at base_url=), transformers, vllm, or auto"
    )
    checkpoints: str = option(
        "",
        "local backends: comma-separated run directories (dir@init: the warm-started model; dir@step50: the snapshot "
        "kept after step 50 by keep_steps=) or HF model dirs",
    )
    base_url: str | None = option(None, "openai backend: the API root, e.g. http://127.0.0.1:8000/v1 (vllm serve)")
    model: str | None = option(None, "openai backend: the served model name (default: the first the server lists)")
    api_key: str = option("EMPTY", "openai backend: bearer token (vllm serve without --api-key accepts any)")
    api: Literal["chat", "completions"] = option(
        "chat", "openai backend: chat (the server renders the template) or completions (tokenizer=)"
    )
    server: Literal["auto", "vllm", "other"] = option(
        "auto", "openai backend: vllm (sends vLLM's extra fields), other, or auto (as it says)"
    )
    tokenizer: str | None = option(
        None, "openai backend: the model's tokenizer dir: renders prompts (api=completions), knows the pre-fill"
    )
    timeout: float = option(600.0, "openai backend: seconds per request")
    concurrency: int = option(8, "openai backend: requests in flight (one task each)")
    template_options: Literal["profile", "none"] = option(
        "profile", "chat-template options: the env profile's (profile; a server needs to be vLLM) or none"
    )
    method: str | None = option(None, "the method of an HF model dir or a served model (gives mode, m and goal suffix)")
    mode: Literal["single", "multi"] | None = option(
        None, "prompt mode without method= (single or multi; default multi when m > 1)"
    )
    m: int | None = option(None, "answers per completion (default: the method's, or 3 in multi mode)")
    samples: int | None = option(None, "candidates per task and seed (default: env.profile.eval_samples)")
    seeds: int | None = option(None, "evaluation seeds, pools concatenated (default: env.profile.eval_seeds)")
    seed: int = option(0, "base sampling seed (tasks from i sampled together get seed + 10000*s + i)")
    temperature: float | None = option(None, "sampling temperature (default: env.profile.eval.temperature)")
    top_p: float | None = option(None, "nucleus mass (default: env.profile.eval.top_p)")
    max_new_tokens: int | None = option(None, "token budget per completion (default: env.profile.eval)")
    ks: list[int] | None = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        None, f"k of best@k, pass@k and E_w[best@k], e.g. ks=[3,6]; default {list(KS)} where the pools allow"
    )
    conditioning: Literal["both", "w_star", "dirichlet"] = option(
        "both", "goal-conditioned checkpoints: both, w_star or dirichlet (w ~ Dir(1) per task)"
    )
    goal_seed: int = option(0, "seed of the per-task Dir(1) goal weights")
    batch: int = option(16, "local backends: prompts sampled together")
    device: str = option("auto", "transformers backend: auto (cuda when available), cpu or cuda")
    stop_at_answer: bool = option(
        True, "transformers backend: end each sample where the env's last answer closes, as training does"
    )
    gpu_memory_utilization: float = option(0.5, "vllm backend: share of GPU memory vLLM may take")
    log_samples: bool = option(False, "write samples_<row>.jsonl: every completion, its candidates and rewards")
    resume: bool = option(False, "continue the evaluation in out= (logs samples; re-scores the stored ones)")
    name: str | None = option(None, "name of this evaluation (out= defaults to runs/eval/<name>)")
    out: str | None = option(None, "output directory (default runs/eval/<name or UTC time>)")
    progress: bool = option(True, "print a progress line as tasks are done")

    def __post_init__(self) -> None:
        served = self.backend == "openai" or (self.backend == "auto" and self.base_url)
        if served and not self.base_url:
            raise ValueError(
                "backend=openai samples a server: pass base_url=<API root>, e.g. http://127.0.0.1:8000/v1."
            )
        if served and self.checkpoints:
            raise ValueError("pass checkpoints= (a local backend) or base_url= (a server), not both.")
        if not served and not self.checkpoints:
            raise ValueError("pass checkpoints=<run dir or HF model dir>[,<another>...] or base_url=<API root>.")
        if not served and self.base_url:
            raise ValueError(
                f"backend={self.backend} samples local checkpoints; drop base_url= or pass backend=openai."
            )
        for key in ("tasks", "samples", "seeds", "max_new_tokens", "m"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"{key} must be >= 1, got {value}.")
        if self.ks is not None and (not self.ks or min(self.ks) < 1):
            raise ValueError(f"ks must be a non-empty list of k >= 1, got {self.ks}.")
        if self.batch < 1 or self.concurrency < 1:
            raise ValueError("batch and concurrency must be >= 1.")
        if self.timeout is not None and not (np.isfinite(self.timeout) and self.timeout >= 0):
            raise ValueError(f"timeout must be a finite number >= 0, got {self.timeout}.")
        # the samplers' own rule (`SamplingSettings`), checked before anything is loaded
        if self.temperature is not None and not (np.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a finite number > 0, got {self.temperature}.")
        if self.top_p is not None and not (np.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}.")

    @property
    def served(self) -> bool:
        """Whether a server is sampled (the openai backend)."""
        return self.base_url is not None


RENAMED = {
    "endpoint": "base_url",
    "served_model": "model",
    "max_workers": "concurrency",
    "request_timeout_s": "timeout",
}
"""apps/evaluate.py's former option names and the key each became (refused, naming the new one)."""


# ------------------------------------------------------------------------------------ targets
@dataclass
class Target:
    """One model to evaluate: its label, where it is, and the prompts it was trained with."""

    label: str
    model_dir: Path | None
    mode: str
    m: int
    goal_prompt: bool
    max_new_tokens: int | None = None
    """The token budget the run trained and evaluated with (a run directory's), or None."""


def _message(exc: BaseException) -> str:
    return str(exc.args[0] if exc.args else exc)


def _method_target(label: str, model_dir: Path | None, config: EvalConfig) -> Target:
    """A model without a run directory: mode and m from ``method=``, else ``mode=``/``m=`` (else `ConfigError`)."""
    from vpo_core.methods import check_mode_m, get_method

    if config.method is not None:
        try:
            method = get_method(config.method)
            m = method.resolve_m(config.m)
        except (KeyError, ValueError) as exc:  # the registry's and the method's checks of what the user wrote
            raise ConfigError(_message(exc)) from None
        if config.mode is not None and config.mode != method.mode:
            raise ConfigError(f"method={config.method} prompts in {method.mode} mode; drop mode={config.mode}.")
        return Target(label, model_dir, method.mode, m, method.goal_prompt)
    mode = config.mode or ("multi" if (config.m or 1) > 1 else "single")
    m = config.m if config.m is not None else (3 if mode == "multi" else 1)
    try:
        check_mode_m(mode, m)
    except ValueError as exc:  # the prompt-mode rule, written once in vpo_core.methods
        hint = f" (drop m={m} or pass mode=multi)" if mode == "single" else ""
        raise ConfigError(f"{exc}{hint}") from None
    return Target(label, model_dir, mode, m, False)


def _split_at(text: str) -> tuple[str, str]:
    """``dir@init`` / ``dir@step50`` -> (``dir``, ``init``/``step50``); anything else -> (text, ``final``)."""
    which = re.fullmatch(r"(.+)@(init|step[0-9]+)", text)
    return (which.group(1), which.group(2)) if which else (text, "final")


def resolve(text: str, config: EvalConfig) -> Target:
    """A checkpoint argument as a `Target` (run directories are read through `RunDir` only).

    Raises:
        RunDirError: A run directory that cannot be used, or an ``@`` model it does not have.
        MissingDataError: A checkpoint that does not exist.
        ConfigError: A plain model directory with a method, mode or m that does not fit.
    """
    from vpo_core.methods import get_method
    from vpo_engines.runs import RunDir

    base, which = _split_at(text)
    path = Path(base)
    run = RunDir(path)
    saved = run.read_config() if run.exists() else {}
    if "method" in saved:  # a run directory (an HF model directory's config.json names no method)
        model_dir = run.model_dir(which)
        try:
            method = get_method(saved["method"])
        except KeyError as exc:
            raise RunDirError(f"{path}: {_message(exc)}") from None
        budget = run.read_token_budget()
        if budget is None and isinstance(saved.get("max_new_tokens"), int) and saved["max_new_tokens"] > 0:
            budget = int(saved["max_new_tokens"])
        label = path.name if which == "final" else f"{path.name}@{which}"
        return Target(label, model_dir, method.mode, method.resolve_m(saved.get("m")), method.goal_prompt, budget)
    if which != "final":
        raise RunDirError(f"{path} is not a run directory of apps/train.py, so it has no @{which} model.")
    if not path.exists():
        raise MissingDataError(f"checkpoint {path} does not exist.")
    return _method_target(path.name, path, config)


def unique_labels(targets: list[Target], texts: list[str]) -> None:
    """Give targets whose labels collide (folders of the same name) labels made from their paths.

    Each colliding label becomes the shortest tail of its checkpoint's path that no other target shares
    (``a/run``, ``b/run``), so no row, pool file or results.json entry overwrites another.

    Args:
        targets: The targets, labels set from the folder names (changed in place).
        texts: The checkpoint arguments they came from, same order.

    Raises:
        ConfigError: If one checkpoint is given twice.
    """
    paths = []
    for text in texts:
        base, which = _split_at(text)
        paths.append(str(Path(base).resolve()) + ("" if which == "final" else f"@{which}"))
    for i, path in enumerate(paths):
        if path in paths[:i]:
            raise ConfigError(f"checkpoint {texts[i]} is given twice in checkpoints=; list each once.")
    labels = [t.label for t in targets]
    for i, target in enumerate(targets):
        parts = Path(paths[i]).parts
        others = [Path(p).parts for j, p in enumerate(paths) if j != i and labels[j] == labels[i]]
        for n in range(2, len(parts) + 1 if others else 0):
            if all(tuple(o[-n:]) != tuple(parts[-n:]) for o in others):
                target.label = "/".join(parts[-n:]).lstrip("/")
                break


# ------------------------------------------------------------------------------------ samplers
def _backend(config: EvalConfig) -> str:
    """The sampling backend (`ConfigError` for vLLM where it cannot run); resolves ``device=auto`` in place."""
    if config.served:
        return "openai"
    from vpo_engines.models.vllm import choose_backend

    if config.device == "auto":
        import torch

        config.device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        return choose_backend(config.backend, config.device)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _template_kwargs(env: Any, config: EvalConfig) -> dict[str, Any]:
    return dict(env.profile.chat_template_kwargs) if config.template_options == "profile" else {}


def _sampler(target: Target, config: EvalConfig, env: Any, backend: str) -> Any:
    """The sampler of `target` on `backend` (`vpo_core.evaluation.sampling.Sampler`).

    Raises:
        ServerError: The server cannot be used (`EndpointError`).
        MissingDataError: A model directory or tokenizer that is not there.
        RunDirError: Weights that are truncated or missing.
    """
    template_kwargs = _template_kwargs(env, config)
    if backend == "openai":
        from vpo_engines.models.openai import OpenAISampler

        assert config.base_url is not None
        return OpenAISampler(
            config.base_url,
            model=config.model,
            api_key=config.api_key,
            api=config.api,
            tokenizer=config.tokenizer,
            chat_template_kwargs=template_kwargs,
            timeout_s=config.timeout,
            max_workers=1,  # one task per request; `concurrency` requests are kept in flight by `_sample_row`
            server=config.server,
        )
    assert target.model_dir is not None
    if backend == "vllm":
        from vpo_engines.models.vllm import VllmSampler

        return VllmSampler(
            target.model_dir, chat_template_kwargs=template_kwargs, gpu_memory_utilization=config.gpu_memory_utilization
        )
    from vpo_engines.models.policy import answer_stops, load_policy
    from vpo_engines.runs import check_weights

    check_weights(target.model_dir, "Save the model again or evaluate another checkpoint.")
    policy = load_policy(target.model_dir, config.device)
    policy.stop_strings = answer_stops(env, target.mode, target.m, config.stop_at_answer)
    policy.chat_template_kwargs = template_kwargs  # renders and pre-fills with the env's template options
    return policy


def _release_memory() -> None:
    """Collect a dropped sampler's model and return cached GPU memory (vLLM's engine holds it)."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _model_positions(model_dir: Path | None) -> int | None:
    """The longest sequence a model directory's config allows (max_position_embeddings), or None."""
    try:
        value = (
            json.loads((model_dir / "config.json").read_text()).get("max_position_embeddings") if model_dir else None
        )
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


# ---------------------------------------------------------------------------------------- rows
@dataclass
class Row:
    """One row of the results: a target sampled under one conditioning, with the settings that define it."""

    label: str
    target: Target
    conditioning: str | None
    settings: dict[str, Any]

    @property
    def slug(self) -> str:
        """The row's part of its file names."""
        text = self.target.label if self.conditioning is None else f"{self.target.label}@{self.conditioning}"
        return re.sub(r"[^A-Za-z0-9_.@-]+", "_", text).strip("_") or "model"

    @property
    def sampling(self) -> SamplingSettings:
        """The row's temperature, top-p and token budget, as every sampler takes them."""
        s = self.settings
        return SamplingSettings(temperature=s["temperature"], top_p=s["top_p"], max_new_tokens=s["max_new_tokens"])

    @property
    def pool_size(self) -> int:
        """Candidates per task: completions x seeds x m."""
        return int(self.settings["completions_per_task"] * self.settings["seeds"] * self.settings["m"])


def _row(target: Target, conditioning: str | None, config: EvalConfig, env: Any, common: dict[str, Any]) -> Row:
    """The row of `target` under `conditioning`, its settings from the env profile overridden by the options.

    The token budget is ``max_new_tokens=`` if given, else the budget a run directory trained and evaluated
    with, else the profile's; never more than the model's positions.
    """
    profile = env.profile
    budget = config.max_new_tokens or target.max_new_tokens or profile.eval.max_new_tokens(target.mode, target.m)
    positions = _model_positions(target.model_dir)
    per_task = max(1, (config.samples or profile.eval_samples) // target.m)
    settings = {
        **common,
        "model": str(target.model_dir) if target.model_dir is not None else target.label,
        "mode": target.mode,
        "m": target.m,
        "conditioning": conditioning,
        "goal_seed": config.goal_seed if conditioning == "dirichlet" else None,
        "samples": per_task * target.m,
        "completions_per_task": per_task,
        "seeds": profile.eval_seeds if config.seeds is None else config.seeds,
        "seed": config.seed,
        "temperature": float(profile.eval.temperature if config.temperature is None else config.temperature),
        "top_p": float(profile.eval.top_p if config.top_p is None else config.top_p),
        "max_new_tokens": min(budget, positions) if positions else budget,
        "chat_template_kwargs": _template_kwargs(env, config),
    }
    if common["backend"] == "transformers":
        settings["stop_at_answer"] = config.stop_at_answer
    shown = "w*" if conditioning == "w_star" else "~Dir(1)"
    return Row(target.label if conditioning is None else f"{target.label} (w={shown})", target, conditioning, settings)


def _ks(config: EvalConfig, rows: Sequence[Row]) -> tuple[list[int], list[int]]:
    """The k reported (`KS` where the smallest pool allows, or ``ks=``), and those of `KS` left out.

    Raises:
        ConfigError: A k of ``ks=`` larger than a pool (refused before anything is sampled).
    """
    size = min(r.pool_size for r in rows)
    if config.ks is None:
        return [k for k in KS if k <= size], [k for k in KS if k > size]
    too_large = [k for k in config.ks if k > size]
    if too_large:
        raise ConfigError(
            f"k = {', '.join(map(str, too_large))} is larger than the pools ({size} candidates per task: samples x "
            f"seeds); raise samples=/seeds= or ask for k <= {size}."
        )
    return list(config.ks), []


# -------------------------------------------------------------------------------- output folder
def _shown(text: object, limit: int = 300) -> str:
    """Text from a server (or a file) as one safe terminal line: control characters escaped, cut at `limit`."""
    from vpo_core.http_json import for_terminal

    return for_terminal(str(text), limit)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _out_dir(config: EvalConfig) -> Path:
    return Path(config.out or Path("runs") / "eval" / (config.name or time.strftime("%Y%m%d-%H%M%S", time.gmtime())))


def _check_out(out: Path) -> None:
    """Refuse an out= under a file or a folder that is not writable, before anything is sampled (`DataFileError`)."""
    folder = next((f for f in (out, *out.parents) if f.exists()), None)
    if folder is not None and not folder.is_dir():
        where = "is a file" if folder == out else f"is under {folder}, which is a file"
        raise DataFileError(f"out={out} {where}, not a folder; give a folder path for the evaluation.")
    if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
        raise DataFileError(f"out={out}: {folder} is not writable; give a folder you can write to.")


def _write(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file (an interruption leaves the old file whole; `DataFileError`)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise DataFileError(
            f"out={path.parent}: cannot write {path.name} ({exc}); give a folder you can write to."
        ) from None


# -------------------------------------------------------------------------------------- resume
def _read_run(run_file: Path) -> dict[str, Any]:
    """Each row's settings as ``run.json`` recorded them (`DataFileError` for a file without a ``rows`` object)."""
    fix = "start again in another out= (or delete the folder's samples_*.jsonl and run.json)"
    try:
        previous = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"resume: cannot read {run_file} ({exc}); {fix}.") from None
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting a RecursionError
        raise DataFileError(f"resume: {run_file} is not JSON, so its settings cannot be verified; {fix}.") from None
    rows = previous.get("rows") if isinstance(previous, dict) else None
    if not isinstance(rows, dict) or not all(isinstance(v, dict) for v in rows.values()):
        raise DataFileError(
            f"resume: {run_file} is not a JSON object with each row's settings under 'rows', so its settings "
            f"cannot be verified; {fix}."
        )
    return rows


def _check_resume(previous: dict[str, Any], row: Row, run_file: Path) -> None:
    """Refuse to resume a row sampled with other settings (the server's URL may change).

    Raises:
        DataFileError: The row has a sample log but no recorded settings.
        ConfigError: Naming the settings that differ, as recorded and as now.
    """
    if row.label not in previous:
        raise DataFileError(
            f"resume: {run_file} records no settings for row {_shown(row.label)!r}, so its samples cannot be "
            "verified; start again in another out=."
        )
    before, now = previous[row.label], row.settings
    keys = [k for k in dict.fromkeys([*now, *before]) if k not in NOT_DEFINING]
    changed = [k for k in keys if strict_json.to_strict(before.get(k)) != strict_json.to_strict(now.get(k))]
    if changed:
        shown = "; ".join(
            f"{_shown(k, 40)}: {_shown(json.dumps(before.get(k)), 60)} there, {_shown(json.dumps(now.get(k)), 60)} now"
            for k in changed[:4]
        )
        more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
        raise ConfigError(
            f"resume: {run_file.parent} was made with other settings (its {run_file.name}: {shown}{more}); repeat "
            "them or use another out=."
        )


_RECORD_FIX = "repair or delete that line (its task is then sampled again), or start again in another out="


def _record_problem(record: Any, per_task: int) -> str | None:
    """What is wrong with one line of a sample log as `_records` writes it, or None."""
    if not isinstance(record, dict):
        return "is not a JSON object"
    if not isinstance(record.get("task_id"), str):
        return "has 'task_id' that is not text ('task_id' must be text)"
    sample = record.get("sample")
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample < per_task:
        return f"has 'sample' {_shown(json.dumps(sample))[:40]} ('sample' must be an integer from 0 to {per_task - 1})"
    return None if isinstance(record.get("completion"), str) else "has no completion text ('completion' must be text)"


def _read_done(path: Path, per_task: int, task_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Completed tasks of a sample log (task id -> its records in sample order); a task cut short is sampled again.

    Only the last line may be cut (an interruption while appending; whole tasks are written and flushed).

    Raises:
        DataFileError: For a file that cannot be read, a line that is not JSON (but the cut last one),
            a record of the wrong types, a task that is not in this evaluation, or a sample twice.
    """
    if not path.exists():
        return {}
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"resume: cannot read {path} ({exc}); start again in another out=.") from None
    done: dict[str, dict[int, dict[str, Any]]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting a RecursionError
            if number == len(lines):  # the last line, without its newline: cut by an interruption
                break
            raise DataFileError(f"resume: {path} line {number} is not JSON; {_RECORD_FIX}.") from None
        problem = _record_problem(record, per_task)
        if problem is None and record["task_id"] not in task_ids:
            problem = (
                f"is of task {_shown(record['task_id'])!r}, which is not one of this evaluation's {len(task_ids)} tasks"
            )
        elif problem is None and record["sample"] in done.get(record["task_id"], {}):
            problem = f"repeats sample {record['sample']} of {record['task_id']}"
        if problem is not None:
            raise DataFileError(f"resume: {path} line {number} {problem}; {_RECORD_FIX}.")
        done.setdefault(record["task_id"], {})[record["sample"]] = record
    return {k: [v[j] for j in range(per_task)] for k, v in done.items() if len(v) == per_task}


def _resumed(env: Any, tasks: Sequence[Any], row: Row, log_file: Path, messages: Callable[[int], Any]) -> dict:
    """The complete tasks of a sample log (task index -> records), their completions scored again by the env.

    Raises:
        DataFileError: A damaged sample log (`_read_done`), or a stored prompt these settings do not render.
    """
    per_task = row.settings["completions_per_task"] * row.settings["seeds"]
    stored = _read_done(log_file, per_task, {t.id for t in tasks})
    done: dict[int, list[dict[str, Any]]] = {}
    changed = 0
    for i, task in enumerate(tasks):
        if task.id not in stored:
            continue
        chat = messages(i)
        prompt = [dict(x) for x in chat]
        if any(record.get("prompt") != prompt for record in stored[task.id]):
            raise DataFileError(
                f"resume: {log_file} holds task {task.id} sampled with another prompt than mode="
                f"{row.settings['mode']} m={row.settings['m']} renders (another mode, m, conditioning or env "
                "version); start again in another out=."
            )
        done[i] = _records(env, task, chat, [r["completion"] for r in stored[task.id]], row)
        changed += sum(
            old.get("rewards") != new["rewards"] or old.get("candidates") != strict_json.to_strict(new["candidates"])
            for old, new in zip(stored[task.id], done[i], strict=True)
        )
    if done:
        _log(
            f"{_shown(row.label)}: resuming, {len(done)} of {len(tasks)} tasks already sampled in {log_file}; their "
            f"{len(done) * per_task} completions were scored again with the env"
        )
    if changed:
        _log(
            f"warning: {changed} stored completion(s) had candidates or rewards that differ from the env's score of "
            "their text; the env's are used and written back"
        )
    return done


# ------------------------------------------------------------------------------------- sampling
def _jsonable(value: Any) -> Any:
    try:
        json.dumps(strict_json.to_strict(value))
    except (TypeError, ValueError):
        return repr(value)
    return strict_json.to_strict(value)


def _records(env: Any, task: Any, messages: Any, texts: Sequence[str], row: Row) -> list[dict[str, Any]]:
    """Score one task's completions with the env: one sample-log record each, rewards of shape (m, d_t).

    Parsers are total and rewards are defined for every candidate (the env protocol), so an exception
    here is a bug of the env and stops the evaluation rather than becoming a silent zero.
    """
    mode, m = row.settings["mode"], row.settings["m"]
    names = list(env.spec_for(task).names)
    records = []
    for j, text in enumerate(texts):
        scored = env.score_completion(task, text, mode=mode, m=m)
        rewards = np.asarray(scored.rewards, dtype=np.float64).reshape(m, -1)
        candidates = [
            {"index": c.index, "text": c.text, "answer": _jsonable(c.answer), "error": c.error}
            for c in scored.candidates
        ]
        prompt = [dict(x) for x in messages]
        records.append(
            {"task_id": task.id, "sample": j, "prompt": prompt, "completion": text, "candidates": candidates}
            | {"rewards": strict_json.to_strict(rewards), "reward_names": names}
        )
    return records


def _requested(sampler: Any, row: Row, chats: list[Any], start: int) -> list[str]:
    """The completions of one chunk's prompts, every seed of the row: (prompts x seeds x completions) texts.

    Runs on a worker thread for a server (it only talks to the server). Seed s of the chunk whose first task
    is `start` samples with ``seed + 10000*s + start``, so a resumed run samples a chunk with its own seeds.
    """
    s = row.settings
    per_task = s["completions_per_task"]
    prompts = [sampler.prompt_text(x) for x in chats]
    texts: list[list[str]] = [[] for _ in chats]
    for seed in range(s["seeds"]):
        batch = list(
            sampler.sample(prompts, num_samples=per_task, settings=row.sampling, seed=s["seed"] + 10_000 * seed + start)
        )
        if len(batch) != len(prompts) * per_task:
            raise RuntimeError(f"the sampler returned {len(batch)} completions for {len(prompts) * per_task}")
        for p in range(len(prompts)):
            texts[p] += batch[p * per_task : (p + 1) * per_task]
    return [text for task_texts in texts for text in task_texts]


def _append(sink: Any, records: list[dict[str, Any]], log_file: Path) -> None:
    """Append one task's records to the sample log, flushed: a resume continues after it (`DataFileError`)."""
    try:
        sink.write("".join(strict_json.dumps(r) + "\n" for r in records))
        sink.flush()
    except OSError as exc:
        raise DataFileError(
            f"out={log_file.parent}: cannot write {log_file.name} ({exc}); free space or give another folder, then "
            "resume=true."
        ) from None


def _sample_row(
    sampler: Any, env: Any, tasks: Sequence[Any], row: Row, config: EvalConfig, *, log_file: Path | None
) -> list[list[dict[str, Any]]]:
    """Sample and score every task of `row` (in task order), continuing `log_file` on ``resume=true``.

    Tasks are sampled in chunks (one task per request for a server, ``batch=`` prompts for a local
    model), ``concurrency=`` chunks at once for a server (threads that only wait on it; `_requested`).
    The answers are taken in task order, scored here and appended to the log, so the log is always a
    prefix of the task order and an error stops at its task (the ones before it are written).

    Args:
        sampler: The row's sampler.
        env: The environment.
        tasks: The T tasks.
        row: The row (its settings say mode, m, completions, seeds and sampling).
        config: The options (``batch``, ``concurrency``, ``resume``, ``goal_seed``, ``progress``).
        log_file: The sample log, or None (not logged).

    Returns:
        Per task, its records (``sample`` = seed index x completions + completion index).

    Raises:
        DataFileError: A damaged sample log or an out= that cannot be written.
    """
    from vpo_core.evaluation.sampling import goal_weights_for_eval

    s, served = row.settings, row.settings["backend"] == "openai"
    chunk, in_flight = (1, config.concurrency) if served else (config.batch, 1)
    weights = None
    if row.conditioning is not None:
        weights = goal_weights_for_eval(env, tasks, row.conditioning, seed=config.goal_seed)
    n = s["completions_per_task"] * s["seeds"]

    def messages(i: int) -> Any:
        goal = None if weights is None else weights[i]
        return env.render_prompt(tasks[i], mode=s["mode"], m=s["m"], goal_weights=goal)

    done = _resumed(env, tasks, row, log_file, messages) if config.resume and log_file is not None else {}
    if log_file is not None:  # the log rewritten with the re-scored tasks only (a task cut short goes)
        _write(log_file, "".join(strict_json.dumps(r) + "\n" for i in sorted(done) for r in done[i]))
    todo = [i for i in range(len(tasks)) if i not in done]
    chunks = iter([c for c in ([i for i in todo if a <= i < a + chunk] for a in range(0, len(tasks), chunk)) if c])

    def request(indices: list[int]) -> tuple[list[Any], list[str]]:
        chats = [messages(i) for i in indices]
        return chats, _requested(sampler, row, chats, indices[0] - indices[0] % chunk)

    def submit(indices: list[int]) -> Future[Any]:
        if pool is not None:
            return pool.submit(request, indices)
        future: Future[Any] = Future()  # a local model samples on this thread
        future.set_result(request(indices))
        return future

    finished = len(done)
    pool = ThreadPoolExecutor(max_workers=in_flight) if in_flight > 1 else None
    pending: collections.deque[tuple[list[int], Future[Any]]] = collections.deque()
    try:
        with log_file.open("a", encoding="utf-8") if log_file is not None else contextlib.nullcontext() as sink:
            pending.extend((c, submit(c)) for c in itertools.islice(chunks, in_flight))
            while pending:
                indices, answer = pending.popleft()
                chats, texts = answer.result()
                following = next(chunks, None)
                if following is not None:
                    pending.append((following, submit(following)))
                for p, i in enumerate(indices):
                    done[i] = _records(env, tasks[i], chats[p], texts[p * n : (p + 1) * n], row)
                    if log_file is not None:
                        _append(sink, done[i], log_file)
                finished += len(indices)
                if config.progress and (finished % max(chunk, in_flight) == 0 or not pending):
                    _log(
                        f"[{finished}/{len(tasks)} tasks] {_shown(row.label)}: {finished * n} completions sampled and scored"
                    )
    finally:
        for _, future in pending:
            future.cancel()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return [done[i] for i in range(len(tasks))]


# -------------------------------------------------------------------------------------- results
@dataclass
class RowResult:
    """A row's name, prompts, metrics, best@k curve and results.json entry (what table.md and the plot show)."""

    name: str
    mode: str
    m: int
    metrics: dict[str, float]
    curve: list[float]
    entry: dict[str, Any] = field(default_factory=dict)


def _pools(env: Any, tasks: Sequence[Any], records: list[list[dict[str, Any]]], m: int) -> np.ndarray:
    """The rewards of every task's records, shape (T, n, m, d) with d the widest task's (narrower ones zero-padded)."""
    width = max([env.reward_spec.dim, *(env.spec_for(t).dim for t in tasks)])
    pools = np.zeros((len(tasks), len(records[0]) if records else 0, m, width))
    for t, task_records in enumerate(records):
        for j, record in enumerate(task_records):
            rows = np.asarray(record["rewards"], dtype=np.float64).reshape(m, -1)
            pools[t, j, :, : rows.shape[1]] = rows
    return pools


def _row_metrics(
    env: Any, tasks: Sequence[Any], mode: str, pools: np.ndarray, ks: Sequence[int]
) -> tuple[dict[str, float], dict[str, float], list[float]]:
    """The row's metrics, the bootstrap standard error over tasks of each, and its best@k curve."""
    from vpo_core.metrics import reward_diversity

    task_pools = list(pools)
    per_task = [task_pool_metrics(env, t, p, mode=mode, ks=ks) for t, p in zip(tasks, task_pools, strict=True)]
    for task, task_row, pool in zip(tasks, per_task, task_pools, strict=True):
        flat = pool[..., : env.spec_for(task).dim].reshape(-1, env.spec_for(task).dim)  # generation order
        task_row.update({f"diversity@{k}": reward_diversity(flat[:k]) for k in ks})
    metrics = pool_summary(env, tasks, task_pools, per_task, mode=mode, ks=ks)
    errors = standard_errors(env, tasks, task_pools, per_task, metrics)
    curve = pool_curve(env, tasks, task_pools, mode=mode)
    return metrics, errors, curve


def _with_error(metrics: dict[str, Any], errors: dict[str, Any], key: str) -> str:
    """``0.500 ± 0.050`` (the standard error left out where it is undefined)."""
    value, se = metrics.get(key), errors.get(key)
    if not isinstance(value, float) or not np.isfinite(value):
        return "-"
    return f"{value:.3f} ± {se:.3f}" if isinstance(se, float) and np.isfinite(se) else f"{value:.3f}"


def _report(results: dict[str, Any], out: Path) -> str:
    """The printed summary: per row the headline metrics, each with its standard error."""
    lines = []
    for label, row in results["rows"].items():
        metrics, errors = row["metrics"], row["standard_errors"]
        top = max((k for k in KS if f"best@{k}" in metrics), default=1)
        keys = dict.fromkeys(["best@1", f"best@{top}", f"pass@{top}", "E_w[best@5]", "diversity@5", "mean_w_star"])
        shown = ", ".join(
            f"{key} {_with_error(metrics, errors, key)}" for key in keys if isinstance(metrics.get(key), float)
        )
        lines.append(f"{results['env']} · {_shown(label)} ({row['mode']}, m={row['m']}): {shown}")
    lines += [
        f"{results['tasks']} tasks; ± is the standard error from {results['bootstrap']['resamples']} bootstrap "
        f"resamples over tasks (seed {results['bootstrap']['seed']})",
        f"wrote {out / 'results.json'}, table.md and the pools (pool_<row>.npy)",
        f"nothing is uploaded; results stay in {out}",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- main
def _env_and_tasks(config: EvalConfig) -> tuple[str, Any, list[Any]]:
    """The canonical env id, the env and the evaluated tasks.

    Raises:
        ConfigError: An unknown env id, an option its constructor refuses, a split it does not have.
        MissingDataError: The env's data files are not there (the message says how to get them).
        DataFileError: A data file that does not have the expected format.
    """
    from vpo_core.registry import check_env_options, env_tasks, make_env

    env_id, options = check_env_options(config.env, config.env_options, warn=_log)
    config.env, config.env_options = env_id, options
    env = make_env(env_id, options)
    try:
        tasks = env_tasks(env, config.split)[: config.tasks]
    except UserError:
        raise
    except (KeyError, ValueError) as exc:  # the env's check of the split name
        raise ConfigError(f"split={config.split} of {env_id}: {_message(exc)}") from exc
    if not tasks:
        raise ConfigError(f"{env_id} has no tasks in split {config.split!r}.")
    return env_id, env, tasks


def _targets(config: EvalConfig) -> list[Target]:
    """The models to evaluate: the served one, or one per checkpoint with unique labels."""
    if config.served:
        return [_method_target(config.model or "served", None, config)]
    texts = [text for text in config.checkpoints.split(",") if text]
    targets = [resolve(text, config) for text in texts]
    unique_labels(targets, texts)
    return targets


def _conditionings(target: Target, config: EvalConfig) -> list[str | None]:
    """The goal conditionings a target is evaluated under (None: no goal suffix)."""
    if not target.goal_prompt:
        return [None]
    return ["w_star", "dirichlet"] if config.conditioning == "both" else [config.conditioning]


def evaluate(config: EvalConfig) -> dict[str, Any]:
    """Evaluate every row of `config` and write the outputs (see the module docstring); returns results.json.

    Raises:
        UserError: Bad input, in one line; `ServerError` for a server that cannot be used.
    """
    env_id, env, tasks = _env_and_tasks(config)
    backend = _backend(config)
    out = _out_dir(config)
    config.out = str(out)  # resolved once: the default holds the time
    _check_out(out)
    common = {"env": env_id, "env_options": config.env_options, "split": config.split, "tasks": len(tasks)}
    common["backend"] = backend
    if config.served:
        common.update(base_url=config.base_url, api=config.api)
    run_file = out / "run.json"
    previous = _read_run(run_file) if config.resume and run_file.exists() else None
    results: list[RowResult] = []
    recorded: dict[str, dict[str, Any]] = {}
    targets = _targets(config)
    ks, _ = _ks(config, [_row(t, c, config, env, common) for t in targets for c in _conditionings(t, config)])
    for target in targets:
        sampler = _sampler(target, config, env, backend)
        if config.served:
            target.label = str(sampler.model).rstrip("/").split("/")[-1] or "served"
        for row in [_row(target, c, config, env, common) for c in _conditionings(target, config)]:
            if config.served:
                row.settings["model"] = sampler.model
            log_file = out / f"samples_{row.slug}.jsonl" if config.log_samples or config.resume else None
            if log_file is not None and log_file.exists():
                if not config.resume:
                    raise DataFileError(
                        f"{out} holds an evaluation of {_shown(row.label)}; pass resume=true or another out=."
                    )
                if previous is None:
                    raise DataFileError(
                        f"resume: {out} has {log_file.name} but no run.json, so the settings of its samples cannot be "
                        "verified; start again in another out= (or delete its samples_*.jsonl)."
                    )
                _check_resume(previous, row, run_file)
            row_ks, left_out = _ks(config, [row])
            recorded[row.label] = row.settings
            _write(run_file, strict_json.dumps({"schema_version": SCHEMA_VERSION, "rows": recorded}, indent=2) + "\n")
            results.append(_evaluate_row(sampler, env, tasks, row, config, log_file=log_file, ks=row_ks))
            results[-1].entry["ks_not_reported"] = {"ks": left_out, "pool_size": row.pool_size}
            if left_out:
                _log(f"{_shown(row.label)}: best@k, pass@k, E_w[best@k] and diversity@k for k = {', '.join(map(str, left_out))} "
                     f"are not reported: each task's pool has {row.pool_size} candidates; raise samples= "
                     "or seeds= to report them.")  # fmt: skip
        del sampler  # the last reference: free its model before the next checkpoint's is loaded
        _release_memory()
    return _write_results(results, env_id, config, tasks, out, ks)


def _evaluate_row(
    sampler: Any, env: Any, tasks: Sequence[Any], row: Row, config: EvalConfig, *, log_file: Path | None, ks: list[int]
) -> RowResult:
    """Sample, score and save one row: its pool file (always) and its results.json entry."""
    s = row.settings
    sources = {"server": "learned from the server's /tokenize", "tokenizer": "from tokenizer="}
    source = getattr(sampler, "prefill_source", None)
    note = f"; the template pre-fills {_shown(repr(sampler.prefill))} ({sources[source]})" if source in sources else ""
    _log(f"evaluating {_shown(row.label)} on {len(tasks)} {s['env']} {s['split']} tasks with {s['backend']}: "
         f"{s['samples']} candidates x {s['seeds']} seed(s) ({s['mode']}, m={s['m']}), temperature {s['temperature']}, "
         f"top-p {s['top_p']}, max_new_tokens {s['max_new_tokens']}, chat template {s['chat_template_kwargs']} "
         f"(defaults from {s['env']}'s evaluation profile){note}")  # fmt: skip
    missing_before = int(getattr(sampler, "bad_completions", 0) or 0)
    records = _sample_row(sampler, env, tasks, row, config, log_file=log_file)
    missing = int(getattr(sampler, "bad_completions", 0) or 0) - missing_before
    if missing:
        _log(
            f"{_shown(row.label)}: {missing} completion(s) were missing from the server's answers (scored as the pre-fill alone)"
        )
    pools = _pools(env, tasks, records, s["m"])
    metrics, errors, curve = _row_metrics(env, tasks, s["mode"], pools, ks)
    pool_file = _out_dir(config) / f"pool_{row.slug}.npy"
    pool_file.parent.mkdir(parents=True, exist_ok=True)
    save_pool(pool_file, new_pool(env, s["env"], tasks, pools, mode=s["mode"], label=row.label, settings=dict(s)))
    entry = {key: s[key] for key in ("model", "backend", "mode", "m")} | {"conditioning": row.conditioning}
    entry |= {"metrics": metrics, "standard_errors": errors, "curve": curve, "missing_completions": missing}
    entry["chat_template_prefill"] = {
        "text": getattr(sampler, "prefill", None),
        "source": getattr(sampler, "prefill_source", "template"),
    }
    entry |= {"pool": pool_file.name, "samples": log_file.name if log_file is not None else None, "settings": s}
    entry["settings_digest"] = settings_digest(s)
    return RowResult(row.label, s["mode"], s["m"], metrics, curve, entry)


def _write_results(
    results: list[RowResult], env_id: str, config: EvalConfig, tasks: Sequence[Any], out: Path, ks: list[int]
) -> dict[str, Any]:
    """Write results.json (the one schema), table.md and best_at_k.png (with matplotlib); returns results.json."""
    import importlib.util

    payload = {
        "schema_version": SCHEMA_VERSION,
        "env": env_id,
        "env_options": config.env_options,
        "split": config.split,
        "tasks": len(tasks),
        "bootstrap": {"over": "tasks", "resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED},
        "rows": {r.name: r.entry for r in results},
        "versions": package_versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    _write(out / "results.json", strict_json.dumps(payload, indent=2) + "\n")
    _write(out / "table.md", markdown_table(results, ks=ks, ew_ks=ks if config.ks else (5,)) + "\n")
    if importlib.util.find_spec("matplotlib") is not None:
        from vpo_core.evaluation.plots import plot_best_at_k

        plot_best_at_k(results, out / "best_at_k.png", title=f"{env_id} {config.split}")
    return payload


def main(argv: Sequence[str] | None = None, *, prog: str = "vpo-eval") -> int:
    """The evaluation command: 0 on success, 2 for bad input, 1 for a server that cannot be used.

    Only the project's own error types (`vpo_core.errors`) become one-line messages; any other exception
    (an env's scoring bug included) keeps its traceback.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        config = parse_config(
            EvalConfig, args, prog=prog, description=__doc__ or "", passthrough={"env": "env_options"}, renamed=RENAMED
        )
        results = evaluate(config)
    except HelpRequested as exc:
        print(exc.text)
        return 0
    except (ServerError, UserError) as exc:
        _log(f"error: {_shown(exc, 4000)}")
        return 1 if isinstance(exc, ServerError) else 2
    table = (_out_dir(config) / "table.md").read_text(encoding="utf-8")
    print("\n".join(_shown(line, 10_000) for line in table.splitlines()))
    print(_report(results, _out_dir(config)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(prog="python -m vpo_engines.evaluate"))
