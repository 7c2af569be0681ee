"""``uv run vpo train [key=value ...]``: warm-up, RL and evaluation on one machine.

With no arguments: maze, VPO, a small model built locally and warmed up on the env's
demonstrations (``env.demonstration``), RL with the paper's loss, then evaluation of the warmed-up
and the trained model on the 100 test tasks. The run directory (``runs/<env>-<method>-seed<seed>`` or
``out=``, layout in `rundir.RunDir`) receives the config, per-step metrics (JSONL), checkpoints, a
report (markdown + JSON, with the time of each phase) and PNG plots; running the same command again
resumes from the last checkpoint.

`run` is a sequence of phases, each its own function: `open_run` (env, tasks, run directory),
`build_policy` (model building and warm-up, or loading), `evaluate_phase` (before and after RL),
`rl_phase` (RL steps and checkpoints) and `write_report`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core import strict_json
from vpo_core.errors import ConfigError, MissingDataError, UserError
from vpo_core.registry import env_tasks, make_env
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.local.config import TrainConfig, parse_overrides
from vpo_engines.local.errors import NonFiniteLossError
from vpo_engines.runs import STATE_MISFIT_ERRORS, RunDir, RunDirError

__all__ = ["NonFiniteLossError", "RunState", "main", "preflight", "run"]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    """Entry point of the local engine (``vpo train engine=local``): 0 on success, 2 on bad input.

    A user error (`vpo_core.errors.UserError`: a bad option, an unusable file or run directory, missing
    data) is printed as one line and returns 2; any other exception propagates with its traceback.
    """
    from vpo_core.cli_config import HelpRequested, exit_status

    try:
        config = preflight(parse_overrides(argv))
        with termination_as_exit():
            run(config)
    except (HelpRequested, UserError) as exc:
        return exit_status(exc)
    return 0


@contextmanager
def termination_as_exit() -> Iterator[None]:
    """Turn SIGTERM (``kill``, a scheduler's stop) into ``SystemExit(143)`` while the block runs.

    Python's default SIGTERM ends the process without unwinding, so a start stopped that way left its
    run directory behind and blocked the retry; as an exception it takes the same path as Ctrl-C
    (`_remove_failed_start`; a checkpoint is replaced by a rename swap, so a stop during RL stays
    resumable). Outside the main thread signals cannot be handled, and the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def preflight(config: TrainConfig) -> TrainConfig:
    """Everything that can be checked before torch, the engine or a run directory: the config to run.

    The env id becomes canonical (``env=maze`` -> ``maze-v1``, with a warning; the canonical id is what
    ``config.json`` and the default run directory record), ``env.<key>=`` options are checked against
    the env constructor's signature, the trackers' packages and a ``model=`` directory must exist.
    Imports only the env's package.

    Raises:
        ConfigError: An unknown env id, an env option the constructor does not take, or a missing tracker package.
        MissingDataError: ``model=`` names no directory.
    """
    from vpo_core.registry import check_env_options
    from vpo_engines.local.trackers import check_trackers

    env_id, options = check_env_options(config.env, config.env_options, warn=_log)
    check_trackers(config.loggers)
    if config.model is not None and not Path(config.model).is_dir():
        raise MissingDataError(
            f"model={config.model} is not a directory; give a local Hugging Face model directory (config.json, "
            "tokenizer and weights), or leave model= out to build the default small model."
        )
    if (env_id, options) == (config.env, config.env_options):
        return config
    return dataclasses.replace(config, env=env_id, env_options=options)


@dataclass
class RunState:
    """What the phases of one run share.

    Attributes:
        config: The validated config.
        env: The environment.
        run_dir: The run directory.
        train_tasks: Training tasks.
        test_tasks: Evaluation tasks (the first ``eval_tasks`` of the test split).
        rollout: Sampling settings of the RL rollouts (config overrides, else ``env.profile.train``).
        evaluation: Sampling settings of the evaluations (config overrides, else ``env.profile.eval``).
            Both share the run's token budget: ``max_new_tokens=``, else the profile's training budget
            until `token_budget` caps it (`limit_budget`).
        timings: Seconds spent in each phase (reported).
    """

    config: TrainConfig
    env: Any
    run_dir: RunDir
    train_tasks: list[Any]
    test_tasks: list[Any]
    rollout: SamplingSettings
    evaluation: SamplingSettings
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        """Prompt mode of the method."""
        return self.config.mode

    @property
    def m(self) -> int:
        """Answers per completion."""
        return self.config.advantage.m

    def limit_budget(self, max_new_tokens: int) -> None:
        """Set the token budget per completion of the rollouts and the evaluations."""
        self.rollout = self.rollout.with_budget(max_new_tokens)
        self.evaluation = self.evaluation.with_budget(max_new_tokens)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the time spent in the block to ``timings[phase]``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = round(self.timings.get(phase, 0.0) + time.perf_counter() - start, 1)


def _progress(total: int, desc: str) -> Any:
    """A tqdm bar on stderr (a no-op object if tqdm is missing)."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover

        class _Null:
            def update(self, n: int = 1) -> None: ...
            def set_postfix(self, **kwargs: Any) -> None: ...
            def close(self) -> None: ...

        return _Null()
    return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True, leave=True)


@contextmanager
def _quiet_hf() -> Iterator[None]:
    """Silence Hugging Face's own progress bars ("Loading weights", "Writing model shards") in the block."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        yield
        return
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


# ------------------------------------------------------------------------------------ phases
def open_run(config: TrainConfig) -> RunState:
    """Make the env, pick the tasks, check and recover the run directory, save the config.

    Raises:
        ConfigError: If the device is unavailable or the env's constructor refuses an option.
        RunDirError: If the directory holds a run with other settings.
        MissingDataError, DataFileError: If the env's data or the ``model=`` directory is missing or unusable.
    """
    import torch

    from vpo_engines.models.policy import check_model_dir

    torch.set_num_threads(config.threads)
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device=cuda was asked for but torch sees no CUDA device; use device=cpu.")
    env = make_env(config.env, config.env_options)
    if config.model is not None:
        with _quiet_hf():
            check_model_dir(config.model)  # fail early, with the loader's message, on a bad model directory
    run_dir = RunDir(config.run_dir)
    if run_dir.exists():
        different = config.conflicts(run_dir.read_config())
        if different:
            shown = "; ".join(f"{k}={old!r} in the run, {k}={new!r} now" for k, (old, new) in different.items())
            raise RunDirError(
                f"{run_dir.path} holds a run with different settings ({shown}); pass out=<new dir> for a new run "
                "or repeat the original arguments to resume it (config=<run dir>/config.json replays them)."
            )
        run_dir.recover(_log)
    train_tasks = env_tasks(env, "train")  # a missing dataset stops here, before anything is written
    test_tasks = env_tasks(env, "test")[: config.eval_tasks]
    run_dir.write_config({**config.to_json(), "data_source": env.data_source()})
    profile, m = env.profile, config.advantage.m
    rollout = SamplingSettings.resolve(
        profile.train,
        mode=config.mode,
        m=m,
        temperature=config.temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens,
    )
    evaluation = SamplingSettings.resolve(
        profile.eval,
        mode=config.mode,
        m=m,
        temperature=config.eval_temperature,
        top_p=config.eval_top_p,
        max_new_tokens=rollout.max_new_tokens,  # the evaluation samples with the rollouts' budget
    )
    return RunState(config, env, run_dir, train_tasks, test_tasks, rollout=rollout, evaluation=evaluation)


def _tokenizer_texts(state: RunState) -> list[str]:
    """The env's own text for the default tokenizer: prompts and demonstrations of both modes."""
    rng = np.random.default_rng([state.config.seed, 1])
    texts: list[str] = []
    for task in state.train_tasks[:300]:
        for text_mode, text_m in (("single", 1), ("multi", state.m if state.mode == "multi" else 3)):
            texts.extend(msg["content"] for msg in state.env.render_prompt(task, mode=text_mode, m=text_m))
            demo = state.env.demonstration(task, mode=text_mode, m=text_m, rng=rng)
            texts.extend([demo] if demo else [])
    return texts


def build_policy(state: RunState) -> tuple[Any, str, int]:
    """The policy to train, the run id and the first RL step.

    Resumes from the checkpoint if there is one; else reuses a saved ``init_model`` (a run stopped
    before its first checkpoint), loads ``model=`` or builds and warms up the default model (going on
    from ``warmup/`` if a warm-up was stopped part-way).

    Returns:
        (policy, run id = digest of ``init_model``, first step).

    Raises:
        RunDirError: If the checkpoint belongs to another init model or its state is corrupt.
    """
    from vpo_engines.local.warmup import warm_up
    from vpo_engines.models.policy import ModelSpec, load_policy, new_policy

    config, run_dir = state.config, state.run_dir
    run_id = run_dir.run_id()
    if run_dir.has_checkpoint() and run_id is not None:
        manifest = run_dir.read_manifest()
        if manifest.get("run_id") != run_id:
            raise RunDirError(
                f"{run_dir.checkpoint} was trained from another init model than {run_dir.init_model}; "
                "pass out=<new dir> for a new run."
            )
        _log(f"resuming {run_dir.path} from its checkpoint at step {manifest['step']}")
        with _quiet_hf():
            policy = load_policy(run_dir.check_checkpoint_model(), config.device)
        return policy, run_id, int(manifest["step"])
    if run_id is not None:
        _log(f"reusing the warm-started model in {run_dir.init_model} (no checkpoint yet)")
        with _quiet_hf():
            return load_policy(run_dir.init_model, config.device), run_id, 0
    if config.model is not None:
        with state.timed("build"), _quiet_hf():
            policy = load_policy(config.model, config.device)
            run_id = run_dir.save_init_model(policy.save)
        return policy, run_id, 0
    resume = run_dir.read_warmup(config.device) if config.warmup_steps else None
    if resume is not None:
        _log(f"resuming the warm-up in {run_dir.warmup_checkpoint} at step {resume['step']} of {config.warmup_steps}")
        with _quiet_hf():
            policy = load_policy(run_dir.warmup_checkpoint / "model", config.device)
    else:
        with state.timed("build"):
            policy = new_policy(
                _tokenizer_texts(state), ModelSpec.from_run(config), seed=config.seed, device=config.device
            )
        n_params = sum(p.numel() for p in policy.model.parameters())
        _log(f"built a {n_params / 1e6:.2f}M-parameter model and a {len(policy.tokenizer)}-token tokenizer")
    if config.warmup_steps:
        with state.timed("warmup"):
            bar = _progress(config.warmup_steps, "warm-up")
            bar.update(0 if resume is None else int(resume["step"]))

            def tick(step: int, loss: float) -> None:
                bar.update(1)
                if step % 10 == 0:
                    bar.set_postfix(loss=f"{loss:.3f}")

            losses = warm_up(
                policy,
                state.env,
                state.train_tasks,
                mode=state.mode,
                m=state.m,
                steps=config.warmup_steps,
                batch_size=config.warmup_batch,
                demos_per_task=config.warmup_demos,
                lr=config.warmup_lr,
                seed=config.seed,
                log=tick,
                resume=resume,
                save=functools.partial(run_dir.save_warmup, policy.save),
                save_every=config.warmup_save_every,
            )
            bar.close()
        state.run_dir.warmup_loss_file.write_text(json.dumps(losses))
        _log(f"warm-up done in {state.timings['warmup']:.0f}s (loss {losses[0]:.2f} -> {losses[-1]:.2f})")
    with _quiet_hf():
        run_id = run_dir.save_init_model(policy.save)
    run_dir.drop_warmup()
    return policy, run_id, 0


def token_budget(state: RunState, policy: Any) -> int:
    """Token budget per completion.

    ``max_new_tokens=`` if given, else the env profile's training budget (``state.rollout``'s before
    `RunState.limit_budget`) capped at 1.25x the longest of 50 demonstrations (a small model needs no
    more room than its demonstrations took).
    """
    if state.config.max_new_tokens:
        return int(state.config.max_new_tokens)
    budget = state.rollout.max_new_tokens
    rng = np.random.default_rng(0)
    lengths = []
    for task in state.train_tasks[:50]:
        text = state.env.demonstration(task, mode=state.mode, m=state.m, rng=rng)
        if text is not None:
            ids = policy.tokenizer(text + policy.tokenizer.eos_token, add_special_tokens=False)["input_ids"]
            lengths.append(len(ids))
    return min(budget, int(max(lengths) * 1.25) + 8) if lengths else budget


def eval_settings(state: RunState) -> dict[str, Any]:
    """What an evaluation depends on besides the model: the key its ``eval_<which>.json`` is stored under.

    A run resumed with other ``eval_tasks``, ``eval_samples``, ``eval_seeds`` or sampling settings
    evaluates again instead of reporting numbers made under the old ones.
    """
    return {
        "tasks": len(state.test_tasks),
        "task_digest": hashlib.sha256("\n".join(str(t.id) for t in state.test_tasks).encode()).hexdigest()[:16],
        "samples": state.config.eval_samples,
        "seeds": state.config.eval_seeds,
        "mode": state.mode,
        "m": state.m,
        **state.evaluation.as_kwargs(),
    }


def evaluate_phase(state: RunState, policy: Any, *, which: str, model: str) -> Any:
    """Evaluate `policy` on the test tasks, or reuse ``eval_<which>.json`` made for this model and settings.

    Samples with ``state.evaluation``; a stored evaluation is reused only if it was made for the model
    with digest `model` under the same `eval_settings`.

    Args:
        state: The run.
        policy: The model to evaluate.
        which: ``init`` (the warm-started model) or ``final`` (after RL).
        model: Digest of the evaluated model's weights (an evaluation of another model is recomputed).

    Returns:
        An `EvalResult` (pools empty when reused from the file).
    """
    from vpo_core.evaluation import EvalResult, evaluate_policy

    config, name = state.config, ("warm-started" if which == "init" else "after RL")
    settings = eval_settings(state)
    saved = state.run_dir.read_eval(which, model=model, settings=settings, log=_log)
    if saved is not None:
        return EvalResult(name, state.mode, state.m, np.zeros((0, 0, state.m, 0)), saved["metrics"], saved["curve"])
    with state.timed(f"eval_{which}"):
        bar = _progress(len(state.test_tasks) * config.eval_seeds, f"evaluate {name}")
        result = evaluate_policy(
            policy,
            state.env,
            state.test_tasks,
            name=name,
            mode=state.mode,
            m=state.m,
            samples=config.eval_samples,
            seeds=config.eval_seeds,
            settings=state.evaluation,
            progress=bar.update,
        )
        bar.close()
    state.run_dir.write_eval(which, {"metrics": result.metrics, "curve": result.curve}, model=model, settings=settings)
    _log(
        f"evaluated the {name} model in {state.timings[f'eval_{which}']:.0f}s: mean w*-reward {result.metrics['mean_w_star']:.3f}"
    )
    return result


def rl_phase(state: RunState, policy: Any, reference: Any, *, run_id: str, first_step: int) -> list[dict[str, Any]]:
    """RL steps from `first_step` to ``steps``, a checkpoint every ``save_every`` steps and at the end.

    Samples with ``state.rollout``.

    Returns:
        The metrics of every step of the run (earlier ones from ``metrics.jsonl``).

    Raises:
        NonFiniteLossError: If a step's loss is not finite; nothing of that step is saved.
    """
    import torch

    from vpo_engines.local.rl import rl_step
    from vpo_engines.local.trackers import open_trackers

    config, run_dir = state.config, state.run_dir
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    if first_step:
        saved = run_dir.load_state(step=first_step)["optimizer"]
        try:
            optimizer.load_state_dict(saved)
        except STATE_MISFIT_ERRORS as exc:  # torch's checks of the saved state only
            raise RunDirError(
                f"{run_dir.state_file} holds an optimizer state that does not fit the model ({type(exc).__name__}: "
                f"{str(exc)[:200]}); {run_dir.checkpoint_fix}"
            ) from None
    history = run_dir.keep_metrics_before(first_step, run_id, _log)
    trackers = open_trackers(config.loggers, run_dir.path, config=config.to_json())
    bar = _progress(config.steps, f"RL {config.method}")
    bar.update(first_step)
    try:
        with state.timed("rl"):
            for step in range(first_step, config.steps):
                record = rl_step(
                    policy,
                    reference,
                    optimizer,
                    state.env,
                    state.train_tasks,
                    config,
                    step=step,
                    sampling=state.rollout,
                )
                if not all(math.isfinite(v) for v in record.values() if isinstance(v, float)):
                    raise NonFiniteLossError(
                        f"RL step {step}: a logged metric is not finite; stopped before saving, so the last good "
                        "checkpoint is kept. Lower lr= or check the env's rewards."
                    )
                record["run_id"] = run_id
                run_dir.append_metrics(record)
                history.append(record)
                trackers.log(record, step=step)
                bar.update(1)
                bar.set_postfix(
                    reward=f"{record['mean_w_star']:.3f}",
                    set=f"{record['set_reward']:.3f}",
                    div=f"{record['diversity']:.2f}",
                )
                kept = step + 1 in config.kept_steps
                if (step + 1) % config.save_every == 0 or step + 1 == config.steps or kept:
                    with _quiet_hf():
                        run_dir.save_checkpoint(
                            policy.save,
                            {"step": step + 1, "optimizer": optimizer.state_dict()},
                            step=step + 1,
                            run_id=run_id,
                        )
                    if kept:
                        run_dir.save_snapshot(step + 1)
    finally:
        bar.close()
        trackers.close()
    return history


def write_report(
    state: RunState, history: list[dict[str, Any]], init: Any, final: Any, *, run_id: str, started: float
) -> dict[str, Any]:
    """Plots, ``report.md`` and ``report.json`` (with the time of each phase)."""
    from vpo_core.evaluation import before_after, markdown_table
    from vpo_core.evaluation.plots import plot_best_at_k, plot_training

    config, run_dir = state.config, state.run_dir
    report: dict[str, Any] = {"config": config.to_json(), "run_dir": str(run_dir.path), "run_id": run_id}
    if history:
        plot_training(history, run_dir.training_plot, title=f"{config.env} · {config.method}")
    if init is not None and final is not None:
        table = markdown_table([init, final])
        plot_best_at_k([init, final], run_dir.best_at_k_plot, title=f"{config.env} test · {config.method}")
        report.update(before_after(init, final))
    state.timings["total"] = round(time.perf_counter() - started, 1)
    report["seconds"] = state.timings["total"]
    report["phase_seconds"] = dict(state.timings)
    timing_lines = ", ".join(f"{k} {v:.0f}s" for k, v in state.timings.items())
    if init is not None and final is not None:
        summary = (
            f"# {config.env} · {config.method} (local engine)\n\n"
            f"Evaluation on {len(state.test_tasks)} test tasks, {config.eval_samples} candidates per task and seed, "
            f"{config.eval_seeds} seed(s), temperature {state.evaluation.temperature}, top-p {state.evaluation.top_p}, "
            f"{state.evaluation.max_new_tokens} tokens per completion.\n\n{table}\n\n"
            f"Mean w*-reward of the candidates: {init.metrics['mean_w_star']:.3f} (warm-started) → "
            f"{final.metrics['mean_w_star']:.3f} (after {config.steps} RL steps).\n\n"
            f"Time per phase (this invocation): {timing_lines}.\n"
        )
        run_dir.report_md.write_text(summary)
        print(summary)
    strict_json.write(run_dir.report_json, report)  # undefined metrics (NaN) are written as null
    return report


def _remove_failed_start(path: Path, *, fresh: bool) -> None:
    """Remove the run directory a failed or interrupted start created (it holds no model yet).

    A folder left by a refused start would block the corrected retry ("holds a run with different
    settings"); a directory that existed before this invocation, that already holds the warm-started
    model or a saved part of its warm-up, is kept.
    """
    run_dir = RunDir(path)
    if fresh and path.is_dir() and not run_dir.init_model.exists() and not run_dir.warmup_checkpoint.exists():
        shutil.rmtree(path, ignore_errors=True)
        _log(f"removed {path}: the run stopped before its warm-started model was saved")


def run(config: TrainConfig) -> dict[str, Any]:
    """Run warm-up, RL and evaluation for a config; returns the report."""
    from vpo_engines.models.policy import answer_stops, load_policy
    from vpo_engines.runs import model_digest

    started = time.perf_counter()
    config = preflight(config)
    fresh = not config.run_dir.exists()
    try:
        state = open_run(config)
        policy, run_id, first_step = build_policy(state)
    except BaseException:
        _remove_failed_start(config.run_dir, fresh=fresh)
        raise
    if config.steps == 0:
        _log(f"steps=0: the warm-started model is in {state.run_dir.init_model} (run id {run_id}); no RL")
        return {"run_id": run_id, "seconds": time.perf_counter() - started, "timings": dict(state.timings)}
    with _quiet_hf():
        reference = load_policy(state.run_dir.init_model, config.device)
    reference.model.requires_grad_(False)
    for model in (policy, reference):  # prompts rendered as the env's model expects (e.g. Qwen3 thinking off)
        model.chat_template_kwargs = dict(state.env.profile.chat_template_kwargs)
    policy.sample_threads = reference.sample_threads = config.sample_threads
    policy.stop_strings = reference.stop_strings = answer_stops(state.env, state.mode, state.m, config.stop_at_answer)
    state.limit_budget(token_budget(state, policy))
    state.run_dir.write_token_budget(state.rollout.max_new_tokens)  # vpo eval evaluates with the same budget
    init = None
    if config.eval_tasks:
        init = evaluate_phase(state, reference, which="init", model=run_id)
    history = rl_phase(state, policy, reference, run_id=run_id, first_step=first_step)
    final = None
    if config.eval_tasks:
        final_digest = model_digest(state.run_dir.checkpoint_model)
        final = evaluate_phase(state, policy, which="final", model=final_digest)
    report = write_report(state, history, init, final, run_id=run_id, started=started)
    _log(f"done in {report['seconds']:.0f}s; run directory: {state.run_dir.path}")
    return report
