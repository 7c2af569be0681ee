"""``vpo train engine=trl``: RL with TRL's GRPOTrainer and vpo-core's advantages, on one node.

The env renders every training prompt (its chat template applied here, like the local engine), TRL
generates G completions per prompt (ending at EOS or where the last answer closes, ``stop_at_answer=``)
and runs its loss, the env scores every completion into (m, d) rewards and
`vpo_core.compute_advantages` gives the advantage TRL's loss uses (`VPOGRPOTrainer`). Without
``model=`` the local engine's small default model is built from the env's own text (no warm-up: TRL
has no supervised phase here; pass a warm-started ``model=`` for a real run).

The run directory (``runs/trl/<env>-<method>-seed<seed>`` or ``out=``) receives ``config.json``,
``metrics.jsonl`` (one record per TRL log, VPO's advantage statistics included), TRL's completions
tables (``completions/completions_<step>.parquet``: prompt, completion, reward and the advantage
trained on), ``final_model/``, and, with ``eval_tasks`` > 0, an evaluation of the initial and the final
model on the test tasks by the local engine's sampler: ``report.md``, ``report.json`` (the local
engine's keys; ``warm_started`` is the model RL started from) and ``best_at_k.png``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vpo_core.advantages import AdvantageConfig
from vpo_core.cli_config import option, run_cli
from vpo_core.errors import ConfigError, UserError
from vpo_core.methods import METHODS
from vpo_core.registry import DEFAULT_ENV
from vpo_core.sampling_settings import SamplingSettings
from vpo_core.types import Mode
from vpo_core.weights import weight_sampler_help

__all__ = ["Prepared", "TRLTrainConfig", "build_trainer", "main", "prepare", "run"]


@dataclass
class TRLTrainConfig:
    """A TRL run's options.

    The loss options default to the paper's: PPO-clip 0.2, dual-clip 3.0 (TRL's ``delta``), token-mean
    (TRL's ``loss_type="dapo"``), k3 ("low-var") KL 1e-3 against the initial model.
    """

    env: str = option(DEFAULT_ENV, "env id (vpo_core.make), e.g. maze-v1")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=dict, help="keyword arguments of the env's constructor, e.g. env.train_size=200"
    )
    method: str = option("vpo", f"training method, one of {sorted(METHODS)}")
    m: int | None = option(None, "answers per completion; default: the method's (3 for multi, 1 for single)")
    model: str | None = option(None, "a local HF model dir; default: build the local engine's small model")
    out: str | None = option(None, "run directory; default runs/trl/<env>-<method>-seed<seed>")
    seed: int = option(0, "seed of the model init, data order, sampling and group-shared weights")
    steps: int = option(50, "RL steps (generation batches)")
    prompts_per_step: int = option(8, "prompts per RL step")
    group_size: int = option(8, "rollouts per prompt (G >= 2)")
    mini_batches: int = option(2, "optimizer steps per generation batch (PPO mini-batches)")
    lr: float = option(1e-6, "learning rate (the paper's)")
    clip_ratio: float = option(0.2, "PPO clip ratio epsilon")
    clip_ratio_c: float = option(3.0, "dual-clip constant (TRL's delta)")
    kl_coef: float = option(1e-3, "k3 KL coefficient against the initial model (TRL's beta)")
    num_weights: int = option(100, "weight draws per group (VPO, random_w)")
    alpha: float = option(1.0, "Dirichlet concentration of the weight draws")
    weight_sampler: str = option("dirichlet", weight_sampler_help())
    std: str = option("population", "group std of the advantage normaliser: population or unbiased")
    max_new_tokens: int | None = option(None, "token budget per completion; default: the env profile's")
    temperature: float | None = option(None, "rollout temperature; default: env.profile.train.temperature")
    top_p: float | None = option(None, "rollout top-p; default: env.profile.train.top_p")
    stop_at_answer: bool = option(
        True,
        "end each sample where the env's last answer closes (its closing tag, TextEnv.answer_stop), as well as "
        "at EOS; false: sample to EOS or the token budget",
    )
    # evaluation on the test split of the initial and the final model (the local engine's sampler)
    eval_tasks: int = option(100, "test tasks evaluated before and after RL (0 = no evaluation)")
    eval_samples: int = option(12, "candidates per task (eval_samples // m chains in multi mode)")
    eval_temperature: float | None = option(None, "evaluation temperature; default: env.profile.eval.temperature")
    eval_top_p: float | None = option(None, "evaluation top-p; default: env.profile.eval.top_p")
    eval_seeds: int = option(1, "evaluation seeds (pools concatenated)")
    print_completions: int = option(0, "completions of each logged batch TRL prints as a table (0: none)")
    device: str = option("cpu", "cpu or cuda")
    vocab_size: int = option(2000, "default model: tokenizer vocabulary")
    hidden_size: int = option(128, "default model: hidden size")
    layers: int = option(2, "default model: layers")
    heads: int = option(4, "default model: attention heads")

    def __post_init__(self) -> None:
        """Check every value.

        Raises:
            ConfigError: One line naming the bad option, the value and what is accepted.
        """
        if self.method not in METHODS:
            raise ConfigError(f"unknown method {self.method!r}; choose one of {sorted(METHODS)} (e.g. method=vpo).")
        try:
            self._advantage = AdvantageConfig.from_run(self)
        except ValueError as exc:  # the record's checks raise ValueError; a TRL config's refusals are ConfigError
            raise ConfigError(str(exc)) from exc
        for name in ("steps", "prompts_per_step", "mini_batches", "num_weights", "eval_samples", "eval_seeds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {name}={getattr(self, name)}.")
        for name in ("eval_tasks", "print_completions"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {name}={getattr(self, name)}.")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got max_new_tokens={self.max_new_tokens}.")
        if self.group_size < 2:
            raise ConfigError(
                f"group_size must be >= 2 (advantages compare rollouts within a group), got {self.group_size}."
            )
        if (self.prompts_per_step * self.group_size) % self.mini_batches:
            raise ConfigError(
                f"mini_batches={self.mini_batches} must divide prompts_per_step x group_size = "
                f"{self.prompts_per_step * self.group_size}."
            )
        for name in ("lr", "clip_ratio", "alpha"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {name}={value}.")
        for name in ("temperature", "eval_temperature"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {name}={value}.")
        for name in ("top_p", "eval_top_p"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and 0 < value <= 1):
                raise ConfigError(f"{name} must be in (0, 1], got {name}={value}.")
        if not (math.isfinite(self.clip_ratio_c) and self.clip_ratio_c > 1 + self.clip_ratio):
            raise ConfigError(f"clip_ratio_c must be > 1 + clip_ratio, got clip_ratio_c={self.clip_ratio_c}.")
        if not (math.isfinite(self.kl_coef) and self.kl_coef >= 0):
            raise ConfigError(f"kl_coef must be a finite number >= 0, got kl_coef={self.kl_coef}.")
        if self.device not in ("cpu", "cuda"):
            raise ConfigError(f"device must be cpu or cuda, got {self.device!r}.")

    @property
    def advantage(self) -> AdvantageConfig:
        """The advantage's options (method, m, seed, K, alpha, sampler, std), parsed and checked on construction."""
        return self._advantage

    @property
    def run_dir(self) -> Path:
        """Where the run's files go."""
        return Path(self.out) if self.out else Path("runs/trl") / f"{self.env}-{self.method}-seed{self.seed}"


def _default_model_dir(config: TRLTrainConfig, env: Any, tasks: list[Any], mode: str, m: int) -> Path:
    """Build the local engine's small default model from the env's text and save it (TRL loads its reference from disk)."""
    import numpy as np

    from vpo_engines.models.policy import ModelSpec, new_policy

    rng = np.random.default_rng([config.seed, 1])
    texts: list[str] = []
    for task in tasks[:300]:
        texts.extend(msg["content"] for msg in env.render_prompt(task, mode=mode, m=m))
        demo = env.demonstration(task, mode=mode, m=m, rng=rng)
        texts.extend([demo] if demo else [])
    policy = new_policy(texts, ModelSpec.from_run(config), seed=config.seed)
    path = config.run_dir / "init_model"
    policy.save(path)
    return path


def _prompt_dataset(config: TRLTrainConfig, env: Any, tasks: list[Any], tokenizer: Any) -> tuple[Any, Any]:
    """The training prompts, rendered with the tokenizer's chat template, as TRL's dataset.

    Returns:
        The dataset (rows ``prompt``, ``task_index``) and, for a goal-conditioned method, the goal
        weights written into each task's prompt, T vectors (d_t,) (else None).
    """
    from datasets import Dataset

    from vpo_engines.models.chat import render_chat

    method, m = config.advantage.method, config.advantage.m
    goal = None
    if method.goal_prompt:  # one row per task: the tasks' d may differ (env-lcb)
        goal = [method.task_goal_weights([env.spec_for(t).dim], [t.id], seed=config.seed)[0] for t in tasks]  # type: ignore[index]  # goal-conditioned: not None
    template_kwargs = dict(env.profile.chat_template_kwargs)
    rows = [
        {
            "prompt": render_chat(
                tokenizer,
                env.render_prompt(t, mode=method.mode, m=m, goal_weights=None if goal is None else goal[i]),
                template_kwargs,
            ),
            "task_index": i,
        }
        for i, t in enumerate(tasks)
    ]
    return Dataset.from_list(rows), goal


def _grpo_config(config: TRLTrainConfig, sampling: SamplingSettings) -> Any:
    """TRL's ``GRPOConfig`` of the paper's loss: one generation batch per step, split into PPO mini-batches."""
    from trl.trainer.grpo_config import GRPOConfig

    batch = config.prompts_per_step * config.group_size
    return GRPOConfig(
        output_dir=str(config.run_dir),
        seed=config.seed,
        learning_rate=config.lr,
        lr_scheduler_type="constant",
        weight_decay=0.01,
        max_grad_norm=1.0,
        max_steps=config.steps * config.mini_batches,
        per_device_train_batch_size=batch // config.mini_batches,
        gradient_accumulation_steps=1,
        steps_per_generation=config.mini_batches,
        num_generations=config.group_size,
        max_completion_length=sampling.max_new_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        epsilon=config.clip_ratio,
        delta=config.clip_ratio_c,
        beta=config.kl_coef,
        loss_type="dapo",
        scale_rewards="none",
        use_cpu=config.device == "cpu",
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        log_completions=True,  # TRL's completions table, written to completions/*.parquet (advantages: VPO's)
        num_completions_to_print=config.print_completions,
    )


@dataclass
class Prepared:
    """What a TRL run checked and resolved before any model trains.

    Attributes:
        env: The environment.
        mode: Prompt mode of the method.
        m: Answers per completion.
        tasks: The training tasks.
        test_tasks: The evaluation tasks (the first ``eval_tasks`` of the test split).
        model_dir: The model RL starts from (``model=``, or the default model saved in ``init_model/``).
        rollout: The rollouts' sampling settings.
        evaluation: The evaluations' (the rollouts' token budget).
        stop_strings: Texts that end a sample besides EOS (`stop_at_answer=`).
        timings: Seconds spent in each phase (reported).
    """

    env: Any
    mode: Mode
    m: int
    tasks: list[Any]
    test_tasks: list[Any]
    model_dir: Path
    rollout: SamplingSettings
    evaluation: SamplingSettings
    stop_strings: tuple[str, ...]
    timings: dict[str, float] = field(default_factory=dict)


def prepare(config: TRLTrainConfig) -> Prepared:
    """Check what the user gave (env, its options and data, the model directory) and resolve the settings.

    Builds and saves the default model when ``model=`` is not given.

    Raises:
        ConfigError: An unknown env id or an env option its constructor refuses.
        MissingDataError, DataFileError: The env's data or the model directory is missing or unusable.
    """
    from vpo_core.registry import env_tasks, make_env
    from vpo_engines.models.policy import answer_stops

    env = make_env(config.env, config.env_options)
    mode, m = config.advantage.method.mode, config.advantage.m
    tasks = env_tasks(env, "train")
    test_tasks = env_tasks(env, "test")[: config.eval_tasks] if config.eval_tasks else []
    started = time.perf_counter()
    if config.model:
        model_dir = Path(config.model)
        _check_model_dir(model_dir)
    else:
        model_dir = _default_model_dir(config, env, tasks, mode, m)
    rollout = SamplingSettings.resolve(
        env.profile.train,
        mode=mode,
        m=m,
        temperature=config.temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens or None,
    )
    evaluation = SamplingSettings.resolve(
        env.profile.eval,
        mode=mode,
        m=m,
        temperature=config.eval_temperature,
        top_p=config.eval_top_p,
        max_new_tokens=rollout.max_new_tokens,  # the evaluation samples with the rollouts' budget
    )
    stops = answer_stops(env, mode, m, config.stop_at_answer)
    timings = {"build": round(time.perf_counter() - started, 1)}
    return Prepared(env, mode, m, tasks, test_tasks, model_dir, rollout, evaluation, stops, timings)


def _check_model_dir(path: Path) -> None:
    """A ``model=`` directory with a config and a tokenizer (the weights are read when the trainer loads it).

    Raises:
        MissingDataError: Naming what is missing.
    """
    from vpo_core.errors import MissingDataError
    from vpo_engines.models.policy import load_tokenizer

    if not path.is_dir():
        raise MissingDataError(
            f"model={path} is not a directory; give a local Hugging Face model directory (config.json, tokenizer "
            "and weights), or leave model= out to build the default small model."
        )
    if not (path / "config.json").exists():
        raise MissingDataError(f"{path} has no config.json: it is not a Hugging Face model directory.")
    load_tokenizer(path)


def _load_model(config: TRLTrainConfig, model_dir: Path) -> tuple[Any, Any]:
    """The model and tokenizer TRL trains, as saved: TRL pads with EOS where the tokenizer has no pad.

    No pad row is added: TRL builds its reference model from the same directory, so the two must
    have the same vocabulary.

    Raises:
        DataFileError: If transformers cannot load the directory.
    """
    from transformers import AutoModelForCausalLM

    from vpo_core.errors import DataFileError
    from vpo_engines.models.policy import load_tokenizer

    tokenizer = load_tokenizer(model_dir, add_pad=False)
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir)
    except (OSError, ValueError) as exc:  # transformers' refusals of a directory: missing weights, unknown type
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataFileError(
            f"model={model_dir} could not be loaded as a Hugging Face causal LM ({type(exc).__name__}: {reason})."
        ) from exc
    return model.to(config.device), tokenizer  # type: ignore[arg-type]  # transformers' .to stub loses the binding


def build_trainer(config: TRLTrainConfig, prepared: Prepared | None = None) -> Any:
    """The env's prompts as a dataset, the model and a `VPOGRPOTrainer` configured like the paper's loss.

    Args:
        config: The run's options.
        prepared: What `prepare` resolved (prepared here if None).

    Returns:
        The trainer (call ``.train()``).
    """
    from vpo_engines.models.chat import template_prefill
    from vpo_engines.trl.trainer import EnvScorer, VPOGRPOTrainer

    p = prepared if prepared is not None else prepare(config)
    model, tokenizer = _load_model(config, p.model_dir)
    dataset, goal = _prompt_dataset(config, p.env, p.tasks, tokenizer)
    prefill = template_prefill(tokenizer, dict(p.env.profile.chat_template_kwargs))
    return VPOGRPOTrainer(
        model=model,
        reward_funcs=[EnvScorer(p.env, p.tasks, mode=p.mode, m=p.m, prefill=prefill)],
        args=_grpo_config(config, p.rollout),
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[_metrics_file(config.run_dir / "metrics.jsonl")],
        advantage=config.advantage,
        goal_weights=goal,
        stop_strings=p.stop_strings,
    )


def _metrics_file(path: Path) -> Any:
    """A TRL callback that appends every log record (``step`` plus TRL's and VPO's metrics) to a JSON Lines file."""
    from transformers import TrainerCallback

    class MetricsFile(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any) -> None:
            if logs and state.is_world_process_zero:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a") as handle:
                    handle.write(json.dumps({"step": int(state.global_step), **logs}) + "\n")

    return MetricsFile()


def evaluate_model(config: TRLTrainConfig, p: Prepared, model_dir: Path, *, which: str) -> Any:
    """Evaluate a saved model on the test tasks with the local engine's sampler (`Policy`).

    Args:
        config: The run's options.
        p: The prepared run.
        model_dir: The model.
        which: ``init`` (the model RL starts from) or ``final``.

    Returns:
        An `EvalResult`.
    """
    from vpo_core.evaluation import evaluate_policy
    from vpo_engines.models.policy import load_policy

    policy = load_policy(model_dir, config.device)
    policy.chat_template_kwargs = dict(p.env.profile.chat_template_kwargs)
    policy.stop_strings = p.stop_strings
    name = "warm-started" if which == "init" else "after RL"
    started = time.perf_counter()
    result = evaluate_policy(
        policy,
        p.env,
        p.test_tasks,
        name=name,
        mode=p.mode,
        m=p.m,
        samples=config.eval_samples,
        seeds=config.eval_seeds,
        settings=p.evaluation,
    )
    p.timings[f"eval_{which}"] = round(time.perf_counter() - started, 1)
    _log(
        f"evaluated the {name} model in {p.timings[f'eval_{which}']:.0f}s: mean w*-reward {result.metrics['mean_w_star']:.3f}"
    )
    return result


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_report(
    config: TRLTrainConfig, p: Prepared, init: Any, final: Any, *, run_id: str, started: float
) -> dict[str, Any]:
    """``report.json`` (the local engine's keys), ``report.md`` and ``best_at_k.png`` of a TRL run."""
    from vpo_core import strict_json
    from vpo_core.evaluation import before_after, markdown_table
    from vpo_core.evaluation.plots import plot_best_at_k

    run_dir = config.run_dir
    report: dict[str, Any] = {"config": asdict(config), "run_dir": str(run_dir), "run_id": run_id}
    if init is not None and final is not None:
        report.update(before_after(init, final))
    p.timings["total"] = round(time.perf_counter() - started, 1)
    report["seconds"] = p.timings["total"]
    report["phase_seconds"] = dict(p.timings)
    if init is not None and final is not None:
        plot_best_at_k([init, final], run_dir / "best_at_k.png", title=f"{config.env} test · {config.method} (TRL)")
        timing = ", ".join(f"{k} {v:.0f}s" for k, v in p.timings.items())
        summary = (
            f"# {config.env} · {config.method} (TRL engine)\n\n"
            f"Evaluation on {len(p.test_tasks)} test tasks, {config.eval_samples} candidates per task, "
            f"temperature {p.evaluation.temperature}, top-p {p.evaluation.top_p}.\n\n"
            f"{markdown_table([init, final])}\n\n"
            f"Mean w*-reward of the candidates: {init.metrics['mean_w_star']:.3f} (initial model) → "
            f"{final.metrics['mean_w_star']:.3f} (after {config.steps} RL steps).\n\n"
            f"Time per phase: {timing}.\n"
        )
        (run_dir / "report.md").write_text(summary)
        print(summary)
    strict_json.write(run_dir / "report.json", report)  # undefined metrics (NaN) are written as null
    return report


def run(config: TRLTrainConfig) -> dict[str, Any]:
    """Prepare, evaluate the initial model, train, save ``final_model/``, evaluate it and write the report.

    Returns:
        The report (``report.json``'s content).

    Raises:
        UserError: A problem with the options, the env's data or the model directory (before training).
    """
    from vpo_engines.runs import model_digest

    started = time.perf_counter()
    p = prepare(config)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    (config.run_dir / "metrics.jsonl").unlink(missing_ok=True)  # this invocation's records only
    (config.run_dir / "config.json").write_text(
        json.dumps({**asdict(config), "data_source": p.env.data_source()}, indent=2)
    )
    run_id = model_digest(p.model_dir)
    init = evaluate_model(config, p, p.model_dir, which="init") if p.test_tasks else None
    with _timed(p, "build"):
        trainer = build_trainer(config, p)
    with _timed(p, "rl"):
        trainer.train()
    final_dir = config.run_dir / "final_model"
    trainer.save_model(str(final_dir))
    _log(f"wrote {final_dir}")
    del trainer
    final = evaluate_model(config, p, final_dir, which="final") if p.test_tasks else None
    report = write_report(config, p, init, final, run_id=run_id, started=started)
    _log(f"done in {report['seconds']:.0f}s; run directory: {config.run_dir}")
    return report


class _timed:
    """Add the time spent in the block to ``p.timings[phase]``."""

    def __init__(self, p: Prepared, phase: str) -> None:
        self.p, self.phase = p, phase

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        total = self.p.timings.get(self.phase, 0.0) + time.perf_counter() - self.start
        self.p.timings[self.phase] = round(total, 1)


def main(argv: list[str]) -> int:
    """``vpo train engine=trl key=value ...``; returns the exit code.

    A user error (`vpo_core.errors.UserError`: a bad option, an unusable file, missing data) is printed
    as one line and returns 2; any other exception propagates with its traceback.
    """
    config = run_cli(
        TRLTrainConfig,
        argv,
        prog="vpo train engine=trl",
        description="RL with TRL's GRPOTrainer and vpo-core's set-level advantages (one node, CPU or GPU).",
        passthrough={"env": "env_options"},
    )
    if isinstance(config, int):
        return config
    try:
        run(config)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
