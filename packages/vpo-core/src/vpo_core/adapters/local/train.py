"""``uv run apps/train.py [key=value ...]``: warm-up, RL and evaluation on one machine.

With no arguments: maze, VPO, a small model built locally and warmed up on the maze solver's
demonstrations, RL with the paper's loss, then evaluation of the warmed-up and the trained model on
the 100 test mazes. The run directory (``runs/<env>-<method>-seed<seed>`` or ``out=``) receives the
config, per-step metrics (JSONL), checkpoints, a report (markdown + JSON) and PNG plots; running the
same command again resumes from the last checkpoint.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from typing import Any

import numpy as np

from vpo_core.adapters.local.config import TrainConfig, parse_overrides

__all__ = ["main", "run"]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    """Entry point of the local engine (``apps/train.py engine=local``): 0 on success, 2 on bad input."""
    from vpo_core.adapters.local.rundir import RunDirError
    from vpo_core.cli_config import ConfigError, HelpRequested

    try:
        config = parse_overrides(argv)
    except HelpRequested as exc:
        print(exc.text)
        return 0
    except ConfigError as exc:
        _log(f"error: {exc}")
        return 2
    try:
        run(config)
    except (ValueError, KeyError, FileNotFoundError, RunDirError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        _log(f"error: {message}")
        return 2
    return 0


def _max_new_tokens(policy: Any, env: Any, tasks: list, mode: str, m: int) -> int:
    from vpo_core.adapters.local.warmup import demonstration_completion

    rng = np.random.default_rng(0)
    lengths = []
    for task in tasks[:50]:
        text = demonstration_completion(env, task, mode, m, rng)
        if text is not None:
            lengths.append(
                len(policy.tokenizer(text + policy.tokenizer.eos_token, add_special_tokens=False)["input_ids"])
            )
    return int(max(lengths) * 1.25) + 8 if lengths else 256


def _check_run_dir(config: TrainConfig) -> bool:
    """Whether the run directory holds a resumable run of this config (raises on a different one)."""
    saved = config.run_dir / "config.json"
    if not saved.exists():
        return False
    previous = json.loads(saved.read_text())
    identity = config.identity()
    different = {k: (previous.get(k), v) for k, v in identity.items() if previous.get(k) != v}
    if different:
        raise ValueError(
            f"{config.run_dir} holds a run with different settings {different}; pass out=<new dir> for a new run "
            "or repeat the original arguments to resume it."
        )
    return (config.run_dir / "checkpoint" / "state.pt").exists()


def run(config: TrainConfig) -> dict[str, Any]:
    """Run warm-up, RL and evaluation for a config; returns the report."""
    import torch

    import vpo_core
    from vpo_core.adapters.local.evaluation import evaluate_policy, markdown_table
    from vpo_core.adapters.local.plots import plot_best_at_k, plot_training
    from vpo_core.adapters.local.policy import load_policy, new_policy
    from vpo_core.adapters.local.rl import rl_step
    from vpo_core.adapters.local.warmup import demonstration_completion, warm_up

    started = time.perf_counter()
    torch.set_num_threads(config.threads)
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device=cuda was asked for but torch sees no CUDA device; use device=cpu.")
    env = vpo_core.make(config.env, **config.env_options)
    if config.model is not None:
        load_policy(config.model, "cpu")  # fail early, with the loader's message, on a bad model directory
    mode, m = config.mode, int(config.m or 1)
    train_tasks = list(env.tasks("train"))
    test_tasks = list(env.tasks("test"))[: config.eval_tasks]
    run_dir = config.run_dir
    resume = _check_run_dir(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(config.to_json(), indent=2))
    init_dir, ckpt_dir = run_dir / "init_model", run_dir / "checkpoint"

    # ---------------------------------------------------------------- policy and reference
    if resume:
        _log(f"resuming {run_dir} from its last checkpoint")
        policy = load_policy(ckpt_dir / "model", config.device)
    elif config.model is not None:
        policy = load_policy(config.model, config.device)
        policy.save(init_dir)
    else:
        rng = np.random.default_rng([config.seed, 1])
        texts = []
        for task in train_tasks[:300]:
            for text_mode, text_m in (("single", 1), ("multi", m if mode == "multi" else 3)):
                texts.extend(msg["content"] for msg in env.render_prompt(task, mode=text_mode, m=text_m))  # type: ignore[arg-type]
                demo = demonstration_completion(env, task, text_mode, text_m, rng)
                texts.extend([demo] if demo else [])
        policy = new_policy(
            texts,
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            layers=config.layers,
            heads=config.heads,
            seed=config.seed,
            max_positions=1024,
            device=config.device,
        )
        n_params = sum(p.numel() for p in policy.model.parameters())
        _log(f"built a {n_params / 1e6:.2f}M-parameter model and a {len(policy.tokenizer)}-token tokenizer")
        if config.warmup_steps:
            t0 = time.perf_counter()
            losses = warm_up(
                policy,
                env,
                train_tasks,
                mode=mode,
                m=m,
                steps=config.warmup_steps,
                batch_size=config.warmup_batch,
                lr=config.warmup_lr,
                seed=config.seed,
                log=lambda s, loss: (
                    _log(f"warm-up {s + 1}/{config.warmup_steps} loss {loss:.3f}") if (s + 1) % 50 == 0 else None
                ),
            )
            (run_dir / "warmup_loss.json").write_text(json.dumps(losses))
            _log(f"warm-up done in {time.perf_counter() - t0:.0f}s (loss {losses[0]:.2f} -> {losses[-1]:.2f})")
        policy.save(init_dir)
    reference = load_policy(init_dir, config.device)
    reference.model.requires_grad_(False)
    max_new = config.max_new_tokens or _max_new_tokens(policy, env, train_tasks, mode, m)

    def evaluate(p: Any, name: str) -> Any:
        return evaluate_policy(
            p,
            env,
            test_tasks,
            name=name,
            mode=mode,
            m=m,
            samples=config.eval_samples,
            temperature=config.eval_temperature,
            top_p=config.eval_top_p,
            seeds=config.eval_seeds,
            max_new_tokens=max_new,
        )

    init_eval_path = run_dir / "eval_init.json"
    if config.eval_tasks and not init_eval_path.exists():
        t0 = time.perf_counter()
        init_result = evaluate(reference, "warm-started")
        init_eval_path.write_text(json.dumps({"metrics": init_result.metrics, "curve": init_result.curve}))
        _log(f"evaluated the warm-started model in {time.perf_counter() - t0:.0f}s: {init_result.metrics}")

    # ---------------------------------------------------------------------------------- RL
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    first_step = 0
    metrics_path = run_dir / "metrics.jsonl"
    if resume:
        state = torch.load(ckpt_dir / "state.pt", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        first_step = int(state["step"])
    if metrics_path.exists():  # drop steps logged after the last checkpoint
        kept = [line for line in metrics_path.read_text().splitlines() if json.loads(line)["step"] < first_step]
        metrics_path.write_text("".join(line + "\n" for line in kept))
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        tqdm = None
    steps = range(first_step, config.steps)
    bar = tqdm(steps, desc=f"RL {config.method}", file=sys.stderr) if tqdm else steps
    for step in bar:
        record = rl_step(policy, reference, optimizer, env, train_tasks, config, step=step, max_new_tokens=max_new)
        with metrics_path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        if tqdm:
            bar.set_postfix(
                reward=f"{record['mean_w_star']:.3f}",
                set=f"{record['set_reward']:.3f}",
                div=f"{record['diversity']:.2f}",
            )
        if (step + 1) % config.save_every == 0 or step + 1 == config.steps:
            tmp = run_dir / "checkpoint.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            policy.save(tmp / "model")
            torch.save({"step": step + 1, "optimizer": optimizer.state_dict()}, tmp / "state.pt")
            shutil.rmtree(ckpt_dir, ignore_errors=True)
            tmp.rename(ckpt_dir)

    # ---------------------------------------------------------------------------- evaluation
    report: dict[str, Any] = {"config": config.to_json(), "run_dir": str(run_dir)}
    history = [json.loads(line) for line in metrics_path.read_text().splitlines()] if metrics_path.exists() else []
    if history:
        plot_training(history, run_dir / "training.png", title=f"{config.env} · {config.method}")
    if config.eval_tasks:
        t0 = time.perf_counter()
        final = evaluate(policy, "after RL")
        init_saved = json.loads(init_eval_path.read_text())
        from vpo_core.adapters.local.evaluation import EvalResult

        init = EvalResult("warm-started", mode, m, np.zeros((0, 0, m, 0)), init_saved["metrics"], init_saved["curve"])
        _log(f"evaluated the trained model in {time.perf_counter() - t0:.0f}s")
        table = markdown_table([init, final])
        plot_best_at_k([init, final], run_dir / "best_at_k.png", title=f"{config.env} test · {config.method}")
        report.update(
            {
                "warm_started": init.metrics,
                "after_rl": final.metrics,
                "learned": final.metrics["mean_w_star"] > init.metrics["mean_w_star"],
            }
        )
        summary = (
            f"# {config.env} · {config.method} (local engine)\n\n"
            f"Evaluation on {len(test_tasks)} test tasks, {config.eval_samples} candidates per task, "
            f"temperature {config.eval_temperature}.\n\n{table}\n\n"
            f"Mean w*-reward of the candidates: {init.metrics['mean_w_star']:.3f} (warm-started) → "
            f"{final.metrics['mean_w_star']:.3f} (after {config.steps} RL steps).\n"
        )
        (run_dir / "report.md").write_text(summary)
        print(summary)
    report["seconds"] = round(time.perf_counter() - started, 1)
    (run_dir / "report.json").write_text(json.dumps(report, indent=2))
    _log(f"done in {report['seconds']:.0f}s; run directory: {run_dir}")
    return report
