"""Supervised warm-up of a fresh model on the env's demonstrations (before RL).

Each example is a task's prompt (in the method's mode) followed by one demonstration completion
from ``env.demonstration(task, mode=..., m=..., rng=...)``: the env writes complete completions in its
own format (the default is its ``reference_completion``), so the engine knows nothing of any env's
answer format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vpo_core.adapters.local.policy import Policy
from vpo_core.env import TextEnv
from vpo_core.types import Task

__all__ = ["warm_up"]


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
) -> list[float]:
    """Train on demonstrations with next-token cross-entropy on the completion tokens.

    Returns:
        The loss of every step.
    """
    rng = np.random.default_rng([seed, 7])
    tok = policy.tokenizer
    prompts = {task.id: policy.prompt_text(env.render_prompt(task, mode=mode, m=m)) for task in tasks}  # type: ignore[arg-type]
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / steps))
    losses: list[float] = []
    policy.model.train()
    for step in range(steps):
        batch = [tasks[int(i)] for i in rng.integers(len(tasks), size=batch_size)]
        texts, completions = [], []
        for task in batch:
            completion = env.demonstration(task, mode=mode, m=m, rng=rng)  # type: ignore[arg-type]
            if completion is None:
                continue
            texts.append(prompts[task.id])
            completions.append(completion + tok.eos_token)
        if not texts:
            raise ValueError(f"{env.env_id} offers no demonstrations or reference completions to warm up on.")
        prompt_ids = tok(texts, add_special_tokens=False)["input_ids"]
        completion_ids = tok(completions, add_special_tokens=False)["input_ids"]
        length = max(len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True))
        ids = torch.full((len(texts), length), tok.pad_token_id, dtype=torch.long)
        labels = torch.full_like(ids, -100)
        attention = torch.zeros_like(ids)
        for row, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
            seq = p + c
            ids[row, : len(seq)] = torch.tensor(seq)
            labels[row, len(p) : len(seq)] = torch.tensor(c)
            attention[row, : len(seq)] = 1
        ids, labels, attention = ids.to(policy.device), labels.to(policy.device), attention.to(policy.device)
        logits = policy.model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if log is not None:
            log(step, losses[-1])
    policy.model.eval()
    return losses
