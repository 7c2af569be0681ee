"""The default model's sampler (`decode.sample_shared_prompts`) draws what `transformers`' `generate` draws.

`Policy.generate` takes it for a Qwen2 model with full attention and no sampling options in its
generation config; these tests switch it off (`decode.supports` patched to False, so `generate` runs)
and compare the tokens of the two paths under one seed: the same processors (pad suppressed,
temperature, top-p), the same multinomial draws, the same stops. Models with grouped key/value heads,
left-padded prompts of different lengths, stop strings and the long tail continued alone are covered;
the log-probs it returns are `Policy.log_probs` of what it sampled.
"""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from vpo_engines.models import decode
from vpo_engines.models.policy import ModelSpec, Policy, new_policy

TEXTS = ["go left then right", "UP DOWN LEFT RIGHT <route_1> </route_1>", "a maze of 9 by 9 cells"] * 4
PROMPTS = ["go left", "a maze of 9 by 9 cells then go", "UP"]  # different lengths: left padding


def _policy(kv_heads: int = 2) -> Policy:
    """A tiny random model whose next token depends strongly on its context (large weights)."""
    policy = new_policy(TEXTS, ModelSpec(vocab_size=300, hidden_size=32, layers=2, heads=2, max_positions=128), seed=0)
    if kv_heads != 2:  # grouped-query attention: rebuild the model with fewer key/value heads
        config = policy.model.config
        config.num_attention_heads, config.num_key_value_heads = 4, kv_heads
        torch.manual_seed(0)
        policy.model = type(policy.model)(config)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "norm" not in name:
                parameter.normal_(std=0.3)
    return policy


def _both(policy: Policy, monkeypatch: pytest.MonkeyPatch, **kwargs):
    """(fast path's output, generate's output) of one `generate_with_log_probs` call."""
    assert decode.supports(policy.model)
    fast = policy.generate_with_log_probs(PROMPTS, seed=3, **kwargs)
    with monkeypatch.context() as patch:
        patch.setattr(decode, "supports", lambda model: False)
        slow = policy.generate_with_log_probs(PROMPTS, seed=3, **kwargs)
    return fast, slow


@pytest.mark.parametrize(
    ("kv_heads", "temperature", "top_p"), [(2, 1.0, 1.0), (1, 1.0, 1.0), (2, 0.7, 0.9), (1, 1.3, 1.0)]
)
def test_the_shared_prompt_sampler_draws_what_generate_draws(monkeypatch, kv_heads, temperature, top_p):
    policy = _policy(kv_heads)
    (texts, prompt_ids, response, log_probs), (slow_texts, slow_ids, slow_response, slow_log_probs) = _both(
        policy, monkeypatch, num_samples=4, max_new_tokens=16, temperature=temperature, top_p=top_p
    )
    assert slow_log_probs is None  # generate gives no log-probs
    assert prompt_ids.tolist() == slow_ids.tolist()
    assert response.tolist() == slow_response.tolist()
    assert texts == slow_texts
    assert len(set(map(tuple, response.tolist()))) > 6  # the rows differ: sampled, not one repeated answer
    assert log_probs is not None
    assert log_probs.shape == response.shape
    pad = policy.tokenizer.pad_token_id
    assert (log_probs[response == pad] == 0).all()
    assert (log_probs[response != pad] < 0).all()


def test_its_log_probs_at_temperature_one_are_the_policys_log_probs(monkeypatch):
    policy = _policy()
    _, prompt_ids, response, log_probs = policy.generate_with_log_probs(
        PROMPTS, num_samples=4, max_new_tokens=16, temperature=1.0, seed=5
    )
    with torch.no_grad():
        want, _ = policy.log_probs(prompt_ids, response)
    assert log_probs is not None
    torch.testing.assert_close(log_probs, want, rtol=0, atol=1e-4)


@pytest.mark.parametrize("tail_after", [None, 5])
def test_stop_strings_and_the_long_tail_stop_where_generate_stops(monkeypatch, tail_after):
    policy = _policy()
    policy.tail_after = None
    free = policy.generate(PROMPTS, num_samples=4, max_new_tokens=20, temperature=1.0, seed=3)[2]
    pad = policy.tokenizer.pad_token_id
    row = free[1][free[1] != pad].tolist()
    policy.stop_strings = (policy.tokenizer.decode(row[3:5]),)  # a text some rows write
    policy.tail_after = tail_after
    (texts, _, response, _), (slow_texts, _, slow_response, _) = _both(
        policy, monkeypatch, num_samples=4, max_new_tokens=20, temperature=1.0
    )
    assert response.tolist() == slow_response.tolist()
    assert texts == slow_texts
    lengths = (response != pad).sum(dim=1)
    assert int(lengths.min()) <= 5 < int(lengths.max())  # some rows stopped at the stop text, others went on


def test_models_it_does_not_cover_use_generate():
    policy = _policy()
    assert decode.supports(policy.model)
    policy.model.generation_config.repetition_penalty = 1.2  # a sampling option of the model's own
    assert not decode.supports(policy.model)
    config = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    assert not decode.supports(LlamaForCausalLM(config))
