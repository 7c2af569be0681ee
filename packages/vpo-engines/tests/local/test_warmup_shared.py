"""The warm-up's shared-prompt loss (several demonstrations of one task, its prompt run once) equals the plain
loss over every prompt + demonstration row, and ``warmup_demos`` draws what it says.

Float32 computations of different shapes round differently, so values are compared relative to their tensor's
scale, with a margin of about 100 over what this machine measured."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import vpo_core
from vpo_core.errors import ConfigError
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.warmup import completion_loss, shared_completion_loss, warm_up
from vpo_engines.models.policy import ModelSpec, new_policy, shared_prompt_logits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model_support"))
from tiny_models import assert_close_to_scale, sharp_tiny_policy


def _loss_and_grads(policy, loss_fn, *args):
    policy.model.zero_grad()
    loss = loss_fn(policy, *args)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in policy.model.parameters()]


def test_shared_prompt_loss_and_gradients_equal_the_plain_rows():
    policy = sharp_tiny_policy()
    tok = policy.tokenizer
    prompts = tok(["go left", "a maze of 9 by 9 cells then go", "UP"], add_special_tokens=False)["input_ids"]
    completions = tok(
        ["RIGHT DOWN<|end|>", "UP<|end|>", "LEFT LEFT LEFT DOWN<|end|>", "DOWN<|end|>", "RIGHT<|end|>", "UP UP<|end|>"],
        add_special_tokens=False,
    )["input_ids"]
    row_prompt = [2, 0, 0, 1, 2, 0]  # shuffled; prompt 1 has one completion, prompt 0 three
    assert len({len(p) for p in prompts}) == 3
    assert len({len(c) for c in completions}) >= 3

    shared, shared_grads = _loss_and_grads(policy, shared_completion_loss, prompts, completions, row_prompt)
    plain, plain_grads = _loss_and_grads(policy, completion_loss, [prompts[i] for i in row_prompt], completions)
    assert_close_to_scale(shared, plain, 1e-5)
    for (name, _), got, want in zip(policy.model.named_parameters(), shared_grads, plain_grads, strict=True):
        assert_close_to_scale(got, want, 1e-5, name)  # measured about 1e-7 of the largest gradient

    # the cache must reach the right rows: pairing the completions with other prompts changes the loss
    wrong, _ = _loss_and_grads(policy, shared_completion_loss, prompts, completions, [0, 1, 2, 2, 1, 0])
    assert abs(float(wrong) - float(plain)) > 1e-3


def test_shared_prompt_loss_with_one_token_completions():
    policy = sharp_tiny_policy()
    tok = policy.tokenizer
    prompts = tok(["go left", "UP"], add_special_tokens=False)["input_ids"]
    completions = [[tok.eos_token_id], [tok.eos_token_id], [tok.eos_token_id]]
    shared, _ = _loss_and_grads(policy, shared_completion_loss, prompts, completions, [1, 0, 1])
    plain, _ = _loss_and_grads(policy, completion_loss, [prompts[1], prompts[0], prompts[1]], completions)
    assert_close_to_scale(shared, plain, 1e-5)


def test_shared_prompt_loss_refuses_rows_without_a_prompt():
    policy = sharp_tiny_policy()
    with pytest.raises(ValueError, match="row_prompt needs one index in \\[0, 1\\) per completion"):
        shared_completion_loss(policy, [[5, 6]], [[7, 8], [9]], [0, 1])


class _CountingMaze:
    """maze-v1 that records the task of every demonstration drawn (a real env; only the calls are counted)."""

    def __init__(self, **options: Any) -> None:
        self.env = vpo_core.make("maze-v1", **options)
        self.drawn: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def demonstration(self, task: Any, **kwargs: Any) -> str | None:
        self.drawn.append(task.index)
        return self.env.demonstration(task, **kwargs)


def _maze_policy(env):
    tasks = env.tasks("train")
    rng = np.random.default_rng(0)
    texts = [env.render_prompt(t, mode="single", m=1)[0]["content"] for t in tasks]
    texts += [env.demonstration(t, mode="single", m=1, rng=rng) for t in tasks]
    return new_policy(
        texts * 3, ModelSpec(vocab_size=400, hidden_size=32, layers=1, heads=2, max_positions=1024), seed=0
    )


def test_warm_up_draws_each_task_demos_per_task_times_and_trains_on_them():
    env = _CountingMaze(train_size=8, test_size=2)
    tasks = env.tasks("train")
    policy = _maze_policy(env.env)
    before = [p.detach().clone() for p in policy.model.parameters()]
    losses = warm_up(policy, env, tasks, mode="single", m=1, steps=6, batch_size=4, lr=3e-3, seed=0, demos_per_task=2)
    assert len(losses) == 6
    assert np.all(np.isfinite(losses))
    assert len(env.drawn) == 6 * 4
    pairs = np.asarray(env.drawn).reshape(-1, 2)  # 2 tasks a step, each drawn twice in a row
    assert np.all(pairs[:, 0] == pairs[:, 1])
    assert len(set(pairs[:, 0].tolist())) > 1
    assert all(not torch.equal(a, b) for a, b in zip(before, policy.model.parameters(), strict=True))


def test_one_demo_per_task_draws_like_before():
    """warmup_demos=1 keeps the plain path and the draws of a batch of distinct examples."""
    env = _CountingMaze(train_size=8, test_size=2)
    tasks = env.tasks("train")
    policy = _maze_policy(env.env)
    warm_up(policy, env, tasks, mode="single", m=1, steps=3, batch_size=4, lr=3e-3, seed=0)
    rng = np.random.default_rng([0, 7])
    expected = []
    for _ in range(3):
        batch = rng.integers(len(tasks), size=4)
        for i in batch:
            expected.append(tasks[int(i)].index)
            env.env.demonstration(tasks[int(i)], mode="single", m=1, rng=rng)
    assert env.drawn == expected


def test_batch_must_be_a_multiple_of_demos_per_task():
    env = vpo_core.make("maze-v1", train_size=4, test_size=2)
    policy = _maze_policy(env)
    with pytest.raises(ConfigError, match="warmup_batch=6 must be a multiple of warmup_demos=4"):
        warm_up(
            policy,
            env,
            env.tasks("train"),
            mode="single",
            m=1,
            steps=1,
            batch_size=6,
            lr=1e-3,
            seed=0,
            demos_per_task=4,
        )
    with pytest.raises(ValueError, match="warmup_batch must be a multiple of warmup_demos"):
        parse_overrides(["warmup_batch=6", "warmup_demos=4"])


def test_a_run_saved_before_warmup_demos_resumes_with_one_demo_per_task():
    config = parse_overrides(["warmup_demos=1"])
    saved = config.identity()
    del saved["warmup_demos"]  # config.json written before the option existed
    assert config.conflicts(saved) == {}
    assert parse_overrides(["warmup_demos=2"]).conflicts(saved) == {"warmup_demos": (1, 2)}


def _shared_prompt_grads(policy, threads: int) -> list[torch.Tensor]:
    """The gradients of a fixed loss of `shared_prompt_logits` (8 prompts x 8 rows each), on `threads` threads."""
    generator = torch.Generator().manual_seed(0)
    vocab = policy.model.config.vocab_size
    prompts = torch.randint(3, vocab, (8, 200), generator=generator)
    tokens = torch.randint(3, vocab, (64, 40), generator=generator)
    rows = torch.arange(8).repeat(8)  # each prompt's rows spread over the batch, as in a shuffled mini-batch
    weights = torch.randn(64, 40, vocab, generator=generator)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        policy.model.zero_grad()
        logits = shared_prompt_logits(policy.model, prompts, torch.ones_like(prompts), rows, tokens)
        (logits.float() * weights).sum().backward()
    finally:
        torch.set_num_threads(before)
    return [p.grad.clone() for p in policy.model.parameters()]


def test_shared_prompt_gradients_are_the_same_on_one_or_two_threads():
    # each prompt's cache is gathered to its 8 rows; the gradients sum over those rows. Summed with atomic adds
    # (advanced indexing's backward on several CPU threads) the order, and so the float sums, changed from run
    # to run, and so did a local run's metrics at the default threads=2 (issue 40: 0.297-0.303 for one seed).
    policy = new_policy(
        ["go left then up", "UP DOWN LEFT RIGHT"], ModelSpec(vocab_size=300, hidden_size=64, layers=1, heads=2), seed=0
    )
    serial = _shared_prompt_grads(policy, 1)
    for _ in range(2):
        parallel = _shared_prompt_grads(policy, 2)
        for (name, _), got, want in zip(policy.model.named_parameters(), parallel, serial, strict=True):
            assert torch.equal(got, want), name
