"""Supervised warm-up of a fresh model on the env's demonstrations (before RL).

Each example is a task's prompt (in the method's mode) followed by one demonstration completion
from ``env.demonstration(task, mode=..., m=..., rng=...)``: the env writes complete completions in its
own format (the default is its ``reference_completion``), so the engine knows nothing of any env's
answer format.

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

from vpo_core.adapters.local.policy import Policy, left_padded_positions
from vpo_core.adapters.local.rundir import STATE_MISFIT_ERRORS
from vpo_core.env import TextEnv
from vpo_core.errors import ConfigError, RunDirError
from vpo_core.types import Task

__all__ = ["completion_loss", "warm_up"]


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
    log: Callable[[int, float], None] | None = None,
    resume: dict[str, Any] | None = None,
    save: Callable[[dict[str, Any]], None] | None = None,
    save_every: int = 100,
) -> list[float]:
    """Train on demonstrations with next-token cross-entropy on the completion tokens.

    Args:
        policy: The model and tokenizer to train (in place).
        env: Renders the prompts and writes the demonstrations.
        tasks: The training tasks; each step draws `batch_size` of them with replacement.
        mode: ``"single"`` or ``"multi"``, the method's prompt mode.
        m: Answers per completion in multi mode.
        steps: Warm-up steps in all (a resumed warm-up runs the rest).
        batch_size: Examples per step.
        lr: Peak learning rate (linear warm-up over 20 steps, linear decay to 10 %).
        seed: Seeds the demonstration sampler.
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
        RunDirError: If the `resume` state does not fit the model or the schedule.
    """
    rng = np.random.default_rng([seed, 7])
    tok = policy.tokenizer
    prompts = {task.id: policy.prompt_text(env.render_prompt(task, mode=mode, m=m)) for task in tasks}  # type: ignore[arg-type]
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / steps))
    losses: list[float] = []
    first = 0
    if resume is not None:
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
        losses, first = list(resume["losses"]), int(resume["step"])
    policy.model.train()
    for step in range(first, steps):
        batch = [tasks[int(i)] for i in rng.integers(len(tasks), size=batch_size)]
        texts, completions = [], []
        for task in batch:
            completion = env.demonstration(task, mode=mode, m=m, rng=rng)  # type: ignore[arg-type]
            if completion is None:
                continue
            texts.append(prompts[task.id])
            completions.append(completion + tok.eos_token)
        if not texts:
            raise ConfigError(
                f"{env.env_id} offers no demonstrations or reference completions to warm up on; pass "
                "model=<a warm-started model dir> or warmup_steps=0."
            )
        prompt_ids = tok(texts, add_special_tokens=False)["input_ids"]
        completion_ids = tok(completions, add_special_tokens=False)["input_ids"]
        loss = completion_loss(policy, prompt_ids, completion_ids)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if log is not None:
            log(step, losses[-1])
        if save is not None and (step + 1) % save_every == 0 and step + 1 < steps:
            save(
                {
                    "step": step + 1,
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(),
                    "rng": rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state(),
                    "losses": losses,
                }
            )
    policy.model.eval()
    return losses


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
