"""Supervised warm-up of a fresh model on the env's demonstrations (before RL).

Each example is a task's prompt (in the method's mode) followed by one demonstration completion
from ``env.demonstration(task, mode=..., m=..., rng=...)``: the env writes complete completions in its
own format (the default is its ``reference_completion``), so the engine knows nothing of any env's
answer format. A step can draw several demonstrations of each task it draws (``demos_per_task``):
the task's prompt then runs once and its key/value cache serves all of them (`shared_completion_loss`).

A warm-up can be saved every ``save_every`` steps (`save`) and resumed from such a state (`resume`):
the optimizer, the schedule, the demonstration sampler's and torch's random states travel with it, so a
resumed warm-up on the CPU ends with the weights of an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vpo_core.env import TextEnv
from vpo_core.errors import ConfigError, RunDirError
from vpo_core.types import Task
from vpo_engines.models.policy import Policy, left_padded_positions, shared_prompt_logits
from vpo_engines.runs import STATE_MISFIT_ERRORS

__all__ = ["completion_loss", "shared_completion_loss", "warm_up"]


def warm_up(
    policy: Policy,
    env: TextEnv[Any, Any],
    tasks: Sequence[Task[Any]],
    *,
    mode: str,
    m: int,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    demos_per_task: int = 1,
    log: Callable[[int, float], None] | None = None,
    resume: dict[str, Any] | None = None,
    save: Callable[[dict[str, Any]], None] | None = None,
    save_every: int = 100,
) -> list[float]:
    """Train on demonstrations with next-token cross-entropy on the completion tokens.

    Args:
        policy: The model and tokenizer to train (in place).
        env: Renders the prompts and writes the demonstrations.
        tasks: The training tasks; each step draws ``batch_size // demos_per_task`` of them with
            replacement.
        mode: ``"single"`` or ``"multi"``, the method's prompt mode.
        m: Answers per completion in multi mode.
        steps: Warm-up steps in all (a resumed warm-up runs the rest).
        batch_size: Examples (demonstrations) per step, a multiple of `demos_per_task`.
        lr: Peak learning rate (linear warm-up over 20 steps, linear decay to 10 %).
        seed: Seeds the demonstration sampler.
        demos_per_task: Demonstrations drawn for each task a step draws (each its own
            ``env.demonstration`` call, e.g. another random route of the same maze); the task's prompt
            runs once for them. 1: every example has its own task (and the step draws exactly what
            earlier versions drew).
        log: Called with (step, loss) after every step.
        resume: A state `save` was given earlier (the policy already holds the weights saved with it):
            the warm-up goes on from its step.
        save: Called with the warm-up state (``step`` done, ``optimizer``, ``schedule``, ``rng``,
            ``torch_rng``, ``losses``) every `save_every` steps, not after the last one: tensors and plain
            data only (the numpy sampler's state is a dict of a name and ints), which the run directory
            reads back with ``torch.load(weights_only=True)``.
        save_every: Steps between saves.

    Returns:
        The loss of every step (the resumed ones included).

    Raises:
        ConfigError: If `batch_size` is not a multiple of `demos_per_task`, or the env offers no
            demonstrations.
        RunDirError: If the `resume` state does not fit the model or the schedule.
    """
    _check_demos(batch_size, demos_per_task)
    rng = np.random.default_rng([seed, 7])
    tok = policy.tokenizer
    texts = [policy.prompt_text(env.render_prompt(task, mode=mode, m=m)) for task in tasks]  # type: ignore[arg-type]
    # each task's prompt is tokenised once (the same ids a step's own call would give), not once per draw
    prompts = dict(zip([task.id for task in tasks], tok(texts, add_special_tokens=False)["input_ids"], strict=True))
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / steps))
    losses: list[float] = []
    first = 0
    if resume is not None:
        _restore(resume, optimizer, schedule, rng)
        losses, first = list(resume["losses"]), int(resume["step"])
    policy.model.train()
    for step in range(first, steps):
        batch = [tasks[int(i)] for i in rng.integers(len(tasks), size=batch_size // demos_per_task)]
        prompt_ids, completions, row_prompt = _draw_examples(env, batch, prompts, mode, m, demos_per_task, rng)
        completions = [completion + tok.eos_token for completion in completions]
        completion_ids = tok(completions, add_special_tokens=False)["input_ids"]
        if demos_per_task == 1:
            loss = completion_loss(policy, prompt_ids, completion_ids)
        else:
            loss = shared_completion_loss(policy, prompt_ids, completion_ids, row_prompt)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if log is not None:
            log(step, losses[-1])
        if save is not None and (step + 1) % save_every == 0 and step + 1 < steps:
            save(_state(step + 1, optimizer, schedule, rng, losses))
    policy.model.eval()
    return losses


def _check_demos(batch_size: int, demos_per_task: int) -> None:
    """Refuse a step size that is not a whole number of tasks' demonstrations (`ConfigError`)."""
    if demos_per_task < 1 or batch_size % demos_per_task:
        raise ConfigError(
            f"warmup_batch={batch_size} must be a multiple of warmup_demos={demos_per_task} (demonstrations per "
            "task in a warm-up step), e.g. warmup_batch=16 warmup_demos=2."
        )


def _state(
    step: int,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    rng: np.random.Generator,
    losses: list[float],
) -> dict[str, Any]:
    """The saved warm-up state after `step` steps: tensors and plain data only (``weights_only`` loads it)."""
    return {
        "step": step,
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "losses": losses,
    }


def _restore(
    resume: dict[str, Any],
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    rng: np.random.Generator,
) -> None:
    """Load a saved warm-up state into the optimizer, the schedule and the random states (in place).

    Raises:
        RunDirError: If the state does not fit the model or the schedule (torch's own checks).
    """
    try:  # the state comes from a file (`RunDir.read_warmup` checked its shape); torch checks it fits
        optimizer.load_state_dict(resume["optimizer"])
        schedule.load_state_dict(resume["schedule"])
        rng.bit_generator.state = resume["rng"]
        torch.set_rng_state(resume["torch_rng"])
    except STATE_MISFIT_ERRORS as exc:  # torch's checks of the saved state only
        raise RunDirError(
            f"the saved warm-up state does not fit this model ({type(exc).__name__}: {str(exc)[:200]}); delete "
            "the run directory's warmup/ folder to restart the warm-up from its first step."
        ) from None


def _draw_examples(
    env: TextEnv[Any, Any],
    batch: Sequence[Task[Any]],
    prompts: dict[str, list[int]],
    mode: str,
    m: int,
    demos_per_task: int,
    rng: np.random.Generator,
) -> tuple[list[list[int]], list[str], list[int]]:
    """One step's examples: each drawn task's demonstrations (tasks without one are passed over).

    Args:
        env: Writes the demonstrations.
        batch: The tasks the step drew.
        prompts: The token ids of each task's prompt, by task id.
        mode: The method's prompt mode.
        m: Answers per completion in multi mode.
        demos_per_task: Demonstrations drawn for each task.
        rng: The demonstration sampler.

    Returns:
        (the step's distinct prompts' token ids, the completions (without EOS), the index in the prompts of
        each completion's prompt).

    Raises:
        ConfigError: If no task of the step has a demonstration.
    """
    prompt_ids: list[list[int]] = []
    completions: list[str] = []
    row_prompt: list[int] = []
    for task in batch:
        drawn = [env.demonstration(task, mode=mode, m=m, rng=rng) for _ in range(demos_per_task)]  # type: ignore[arg-type]
        kept = [completion for completion in drawn if completion is not None]
        if not kept:
            continue
        prompt_ids.append(prompts[task.id])
        completions.extend(kept)
        row_prompt.extend([len(prompt_ids) - 1] * len(kept))
    if not prompt_ids:
        raise ConfigError(
            f"{env.env_id} offers no demonstrations or reference completions to warm up on; pass "
            "model=<a warm-started model dir> or warmup_steps=0."
        )
    return prompt_ids, completions, row_prompt


def completion_loss(
    policy: Policy, prompt_ids: Sequence[list[int]], completion_ids: Sequence[list[int]]
) -> torch.Tensor:
    """Mean next-token cross-entropy over the completion tokens of a batch of prompt + completion.

    The rows are left-padded so every completion ends at the last position: the LM head and the loss
    then run only on the last (longest completion + 1) positions instead of every prompt position.

    Args:
        policy: The model and tokenizer.
        prompt_ids: Token ids of each prompt, B lists.
        completion_ids: Token ids of each completion (ending with EOS), B lists.

    Returns:
        The loss, a scalar tensor with gradients.
    """
    pad = policy.tokenizer.pad_token_id
    rows = [p + c for p, c in zip(prompt_ids, completion_ids, strict=True)]
    length = max(len(row) for row in rows)
    keep = max(len(c) for c in completion_ids) + 1  # positions whose logits predict a completion token
    ids = torch.full((len(rows), length), pad, dtype=torch.long)
    labels = torch.full_like(ids, -100)
    attention = torch.zeros_like(ids)
    for index, (row, completion) in enumerate(zip(rows, completion_ids, strict=True)):
        ids[index, length - len(row) :] = torch.tensor(row)
        labels[index, length - len(completion) :] = torch.tensor(completion)
        attention[index, length - len(row) :] = 1
    positions = left_padded_positions(attention)
    ids, labels = ids.to(policy.device), labels.to(policy.device)
    attention, positions = attention.to(policy.device), positions.to(policy.device)
    logits = policy.model(input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=keep).logits
    logits = logits[:, :-1].float()  # (B, keep - 1, V): position t predicts token t + 1
    targets = labels[:, length - keep + 1 :]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)


def shared_completion_loss(
    policy: Policy,
    prompt_ids: Sequence[list[int]],
    completion_ids: Sequence[list[int]],
    row_prompt: Sequence[int],
) -> torch.Tensor:
    """`completion_loss` of rows that share prompts, each distinct prompt run once.

    The prompts run left-padded in one forward pass that keeps their key/value cache (with
    gradients); the cache is gathered to the completions (so a prompt's gradients sum over its
    completions) and only the completions run per row, right-padded, as `Policy.log_probs` does for
    a group's rollouts. The loss and gradients are those of `completion_loss` over the rows
    ``prompt_ids[row_prompt[i]] + completion_ids[i]`` (to float rounding), with the prompt work divided
    by the completions per prompt.

    Args:
        policy: The model and tokenizer.
        prompt_ids: Token ids of each distinct prompt, U lists.
        completion_ids: Token ids of each completion (ending with EOS), N lists.
        row_prompt: The index into `prompt_ids` of each completion's prompt, N ints.

    Returns:
        The mean next-token cross-entropy over every completion token, a scalar tensor with gradients.

    Raises:
        ValueError: If `row_prompt` does not give one prompt index in ``[0, U)`` per completion.
    """
    if len(row_prompt) != len(completion_ids) or not all(0 <= i < len(prompt_ids) for i in row_prompt):
        raise ValueError(
            f"row_prompt needs one index in [0, {len(prompt_ids)}) per completion ({len(completion_ids)}), "
            f"got {list(row_prompt)[:8]}..."
        )
    pad, device = policy.tokenizer.pad_token_id, policy.device
    width = max(len(p) for p in prompt_ids)
    prompts = torch.full((len(prompt_ids), width), pad, dtype=torch.long)
    prompt_mask = torch.zeros_like(prompts)
    for index, ids in enumerate(prompt_ids):
        prompts[index, width - len(ids) :] = torch.tensor(ids)
        prompt_mask[index, width - len(ids) :] = 1
    length = max(len(c) for c in completion_ids)
    completions = torch.full((len(completion_ids), length), pad, dtype=torch.long)
    labels = torch.full_like(completions, -100)
    for index, ids in enumerate(completion_ids):
        completions[index, : len(ids)] = torch.tensor(ids)
        labels[index, : len(ids)] = torch.tensor(ids)
    rows = torch.tensor(list(row_prompt), dtype=torch.long, device=device)
    prompts, prompt_mask = prompts.to(device), prompt_mask.to(device)
    completions, labels = completions.to(device), labels.to(device)
    logits = shared_prompt_logits(policy.model, prompts, prompt_mask, rows, completions)
    logits = logits.float()
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
