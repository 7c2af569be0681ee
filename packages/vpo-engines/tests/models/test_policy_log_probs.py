"""Policy.log_probs shares each distinct prompt's forward pass across its rows: values and gradients
must equal one plain forward over every prompt + response.

Float32 computations of different shapes round differently, and by how much depends on the machine's
kernels, so values are compared relative to their tensor's scale (`_assert_close_to_scale`), with a
margin of about 100 over what this machine measured, not element by element at an absolute tolerance
one machine's rounding happens to meet."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from vpo_engines.local.warmup import completion_loss

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model_support"))
from tiny_models import assert_close_to_scale, sharp_tiny_policy


def _full_forward_log_probs(policy, prompt_ids, response):
    """The reference: one forward over prompt + response per row, no sharing; the sampling policy's
    distribution (the pad token, never sampled, excluded), 0 at padding."""
    pad = policy.tokenizer.pad_token_id
    ids = torch.cat([prompt_ids, response], dim=1)
    attention = torch.cat([(prompt_ids != pad), torch.ones_like(response, dtype=torch.bool)], dim=1).long()
    positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
    logits = policy.model(input_ids=ids, attention_mask=attention, position_ids=positions).logits
    logits = logits[:, prompt_ids.shape[1] - 1 : -1, :].float()
    keep = torch.arange(logits.shape[-1]) != pad
    logp = torch.full_like(logits, float("-inf"))
    logp[..., keep] = F.log_softmax(logits[..., keep], dim=-1)
    token_logp = torch.gather(logp, 2, response.unsqueeze(-1)).squeeze(-1)
    return torch.where(response == pad, 0.0, token_logp)


def _batch(policy, group: int):
    """Three prompts of different lengths (left-padded), `group` rows each, in a shuffled row order."""
    prompts = ["go left", "a maze of 9 by 9 cells then go", "UP"]
    enc = policy.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    prompt_ids = enc["input_ids"].repeat_interleave(group, dim=0)
    generator = torch.Generator().manual_seed(0)
    response = torch.randint(6, len(policy.tokenizer), (prompt_ids.shape[0], 7), generator=generator)
    response[0, 4:] = policy.tokenizer.pad_token_id  # a finished row: padding after its end
    order = torch.randperm(prompt_ids.shape[0], generator=generator)
    return prompt_ids[order], response[order]


def test_shared_prompt_log_probs_equal_a_full_forward_in_value_and_gradient():
    policy = sharp_tiny_policy()
    prompt_ids, response = _batch(policy, group=4)
    assert (prompt_ids == policy.tokenizer.pad_token_id).any()  # left padding is exercised

    shared, entropy = policy.log_probs(prompt_ids, response, with_entropy=True)
    shared.sum().backward()
    shared_grads = [p.grad.clone() for p in policy.model.parameters()]
    policy.model.zero_grad()
    full = _full_forward_log_probs(policy, prompt_ids, response)
    full.sum().backward()
    full_grads = [p.grad.clone() for p in policy.model.parameters()]

    assert shared.shape == response.shape
    assert entropy is not None
    assert entropy.shape == response.shape
    assert_close_to_scale(shared, full, 1e-5)  # measured 8e-8 of max |log p| = 11
    for (name, _), got, want in zip(policy.model.named_parameters(), shared_grads, full_grads, strict=True):
        assert_close_to_scale(got, want, 1e-4, name)  # measured 1.1e-6 of the largest gradient


def test_log_probs_of_distinct_prompts_and_one_token_responses():
    policy = sharp_tiny_policy()
    prompt_ids, response = _batch(policy, group=1)  # no sharing at all
    with torch.no_grad():
        assert_close_to_scale(
            policy.log_probs(prompt_ids, response)[0], _full_forward_log_probs(policy, prompt_ids, response), 1e-5
        )
        one = response[:, :1]
        assert_close_to_scale(
            policy.log_probs(prompt_ids, one)[0], _full_forward_log_probs(policy, prompt_ids, one), 1e-5
        )


def test_generate_with_shared_prompt_prefill_samples_what_plain_generate_samples():
    policy = sharp_tiny_policy()
    prompts = ["go left", "a maze of 9 by 9 cells then go", "UP"]  # different lengths: left padding
    texts, prompt_ids, response = policy.generate(prompts, num_samples=4, max_new_tokens=12, temperature=1.0, seed=3)

    enc = policy.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(3)
    with torch.no_grad():
        plain = policy.model.generate(  # transformers' own prefill of every row, growing cache
            input_ids=enc["input_ids"].repeat_interleave(4, dim=0),
            attention_mask=enc["attention_mask"].repeat_interleave(4, dim=0),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            max_new_tokens=12,
            pad_token_id=policy.tokenizer.pad_token_id,
            eos_token_id=policy.tokenizer.eos_token_id,
            suppress_tokens=[policy.tokenizer.pad_token_id],
        )[:, prompt_ids.shape[1] :]
    eos = plain == policy.tokenizer.eos_token_id
    plain = plain.masked_fill(torch.cumsum(eos.int(), dim=1) - eos.int() > 0, policy.tokenizer.pad_token_id)
    assert len(texts) == 12
    torch.testing.assert_close(prompt_ids, enc["input_ids"].repeat_interleave(4, dim=0))
    torch.testing.assert_close(response, plain, rtol=0, atol=0)


def _right_padded_completion_loss(policy, prompt_ids, completion_ids):
    """The reference: right-padded rows, logits and loss at every position."""
    pad = policy.tokenizer.pad_token_id
    length = max(len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True))
    ids = torch.full((len(prompt_ids), length), pad, dtype=torch.long)
    labels = torch.full_like(ids, -100)
    attention = torch.zeros_like(ids)
    for row, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        ids[row, : len(p) + len(c)] = torch.tensor(p + c)
        labels[row, len(p) : len(p) + len(c)] = torch.tensor(c)
        attention[row, : len(p) + len(c)] = 1
    logits = policy.model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)


def test_warm_up_loss_on_the_last_positions_equals_the_loss_over_every_position():
    policy = sharp_tiny_policy()
    tok = policy.tokenizer
    prompts = tok(["go left", "a maze of 9 by 9 cells then go", "UP"], add_special_tokens=False)["input_ids"]
    completions = tok(["RIGHT DOWN<|end|>", "UP<|end|>", "LEFT LEFT LEFT DOWN<|end|>"], add_special_tokens=False)
    completions = completions["input_ids"]
    assert len({len(c) for c in completions}) == 3  # completions of different lengths, prompts too

    loss = completion_loss(policy, prompts, completions)
    loss.backward()
    grads = [p.grad.clone() for p in policy.model.parameters()]
    policy.model.zero_grad()
    reference = _right_padded_completion_loss(policy, prompts, completions)
    reference.backward()
    assert_close_to_scale(loss, reference, 1e-5)
    for (name, parameter), got in zip(policy.model.named_parameters(), grads, strict=True):
        assert_close_to_scale(got, parameter.grad, 1e-4, name)  # measured 3.4e-7 of the largest gradient
