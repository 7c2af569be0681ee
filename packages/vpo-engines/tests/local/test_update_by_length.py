"""`update_policy` runs its forward passes in parts of similar response length: the loss, gradients,
statistics and updated model must equal one padded pass per mini-batch (to float rounding).

The claim is stated at a precision every machine reaches. The two passes differ by rounding (reductions
of other shapes, kernels that differ between machines), so the comparison runs in float64 (the model's
RMSNorm still reduces in float32 inside) and updates with plain SGD: its step is the gradient, so the
models differ by what the gradients differ by, measured relative to the step (1e-8 here). AdamW would
amplify the rounding wherever a gradient is pure noise: a key projection's bias has an exactly zero
gradient (softmax ignores a shift shared by every key), so its first AdamW step, lr·g/(|g| + eps), is
decided by that noise (in float32 at lr 1e-2 the two updates were 1.1e-5 apart on one machine and
under 1e-5 on another)."""

from __future__ import annotations

import copy

import numpy as np
import torch

from vpo_engines.local.config import TrainConfig
from vpo_engines.local.rl import Rollouts, length_buckets, update_policy
from vpo_engines.models.policy import ModelSpec, new_policy

TEXTS = ["go left then right", "UP DOWN LEFT RIGHT <route_1> </route_1>", "a maze of 9 by 9 cells"] * 4


def _rollouts(policy, prompts: int = 3, group: int = 4, width: int = 40) -> Rollouts:
    """`prompts` × `group` rows of random responses: most 3-8 tokens long, one runs to `width`."""
    texts = ["go left", "a maze of 9 by 9 cells then go", "UP"][:prompts]
    enc = policy.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    prompt_ids = enc["input_ids"].repeat_interleave(group, dim=0)
    generator = torch.Generator().manual_seed(0)
    n = prompt_ids.shape[0]
    response = torch.randint(6, len(policy.tokenizer), (n, width), generator=generator)
    lengths = torch.randint(3, 9, (n,), generator=generator)
    lengths[5] = width  # the rare sample at the token budget
    pad = policy.tokenizer.pad_token_id
    response[torch.arange(width)[None, :] >= lengths[:, None]] = pad
    mask = (response != pad).float()
    return Rollouts([None] * prompts, None, [""] * n, prompt_ids, response, mask)


def _update(split: bool, policy, rollouts, advantages, config):
    policy = copy.deepcopy(policy)
    reference = copy.deepcopy(policy)
    optimizer = torch.optim.SGD(policy.model.parameters(), lr=1.0)  # the step is the (clipped) gradient
    stats = update_policy(
        policy, reference, optimizer, rollouts, advantages, config, step=0, rng=np.random.default_rng(3),
        split_by_length=split,
    )  # fmt: skip
    return policy, stats


def test_an_update_in_length_parts_equals_the_padded_update():
    policy = new_policy(TEXTS, ModelSpec(vocab_size=300, hidden_size=32, layers=2, heads=2, max_positions=128), seed=0)
    policy.model.double()  # see the module docstring: the claim at a precision every machine reaches
    rollouts = _rollouts(policy)
    advantages = np.random.default_rng(1).normal(size=(3, 4))
    config = TrainConfig(mini_batches=2)
    split, split_stats = _update(True, policy, rollouts, advantages, config)
    padded, padded_stats = _update(False, policy, rollouts, advantages, config)
    for name in padded_stats:
        np.testing.assert_allclose(split_stats[name], padded_stats[name], rtol=1e-6, atol=1e-9, err_msg=name)
    steps = [
        (a - before).detach() for a, before in zip(split.model.parameters(), policy.model.parameters(), strict=True)
    ]
    largest = max(float(step.abs().max()) for step in steps)
    assert largest > 1e-2  # the update did move the model
    for (name, a), b in zip(split.model.named_parameters(), padded.model.parameters(), strict=True):
        assert a.dtype == torch.float64
        # measured 1.2e-8 of the largest step (float32: 1.9e-7); a wrong token weighting gives ~1e-2
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5 * largest, msg=name)


def test_length_buckets_split_off_a_long_tail_only_when_it_saves_padding():
    lengths = torch.tensor([5, 7, 6, 40, 5, 6, 8, 5])
    rows = torch.arange(8)
    short, long = length_buckets(lengths, rows)
    assert sorted(long.tolist()) == [3]
    assert sorted(short.tolist()) == [0, 1, 2, 4, 5, 6, 7]
    same = torch.tensor([5, 7, 6, 8, 5, 6, 8, 5])
    assert [part.tolist() for part in length_buckets(same, rows)] == [rows.tolist()]  # little to save
    subset = torch.tensor([1, 3, 6])
    parts = length_buckets(lengths, subset)
    assert sorted(torch.cat(parts).tolist()) == [1, 3, 6]
    assert [part.tolist() for part in length_buckets(lengths, torch.tensor([3]))] == [[3]]
