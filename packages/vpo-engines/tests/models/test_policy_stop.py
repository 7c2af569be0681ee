"""A policy's stop strings end its samples at the stop text, with the same tokens before it."""

from __future__ import annotations

import pytest
import torch

import vpo_core
from vpo_engines.models.policy import ModelSpec, answer_stops, new_policy

TEXTS = ["go left then right", "UP DOWN LEFT RIGHT <route_1> </route_1>", "a maze of 9 by 9 cells"] * 4


def _sample(policy):
    return policy.generate(["go left", "UP"], num_samples=4, max_new_tokens=24, temperature=1.0, seed=0)


def test_a_stop_string_ends_the_sample_after_its_first_occurrence_and_changes_nothing_before_it():
    policy = new_policy(TEXTS, ModelSpec(vocab_size=300, hidden_size=32, layers=2, heads=2, max_positions=128), seed=0)
    pad = policy.tokenizer.pad_token_id
    free_texts, _, free = _sample(policy)
    lengths = (free != pad).sum(dim=1)
    assert int(lengths.min()) > 6  # the random model writes long samples
    # a stop text that occurs early in the first sample: the decoded text of its tokens 2..3
    row = free[0][free[0] != pad].tolist()
    stop = policy.tokenizer.decode(row[2:4])
    policy.stop_strings = (stop,)
    stopped_texts, _, stopped = _sample(policy)
    stopped_lengths = (stopped != pad).sum(dim=1)
    assert int(stopped_lengths[0]) <= 4
    assert stopped_texts[0].endswith(stop)
    assert free_texts[0].startswith(stopped_texts[0])
    for i in range(stopped.shape[0]):  # every row: a prefix of its free sample, cut at the first stop
        n = int(stopped_lengths[i])
        assert stopped[i, :n].tolist() == free[i, :n].tolist()
        assert (stopped[i, n:] == pad).all()
        if n < int(lengths[i]):
            assert stop in stopped_texts[i]
    assert int(stopped_lengths.sum()) < int(lengths.sum())


@pytest.mark.parametrize(("mode", "m", "stop"), [("single", 1, "</answer>"), ("multi", 3, "</route_3>")])
def test_maze_stops_where_its_last_answer_closes(mode, m, stop):
    env = vpo_core.make("maze-v1", train_size=3)
    assert env.answer_stop(mode=mode, m=m) == stop
    assert answer_stops(env, mode, m, True) == (stop,)
    assert answer_stops(env, mode, m, False) == ()
    task = env.tasks("train")[0]
    demonstration = env.reference_completion(task, mode=mode, m=m)
    assert demonstration.endswith(stop)
    assert demonstration.count(stop) == 1  # stopping at its first occurrence loses no answer


def test_envs_without_a_fixed_answer_end_do_not_stop():
    from vpo_core.env import TextEnv

    defaults = [e for e in vpo_core.list_envs() if type(vpo_core.make(e)).answer_stop is TextEnv.answer_stop]
    assert defaults  # the other domains keep sampling to EOS
    for env_id in defaults:
        assert answer_stops(vpo_core.make(env_id), "multi", 3, True) == ()


@pytest.mark.parametrize("stop_row", [None, 0, 3])
def test_continuing_the_long_tail_alone_samples_what_one_pass_samples(stop_row):
    """Greedy sampling (T -> 0) is deterministic, so sampling in two passes (every row up to `tail_after`
    tokens, then the rows still writing) must give one pass's tokens exactly, stops across the seam included."""
    policy = new_policy(TEXTS, ModelSpec(vocab_size=300, hidden_size=32, layers=2, heads=2, max_positions=128), seed=0)
    with torch.no_grad():  # large weights: the next token depends on the whole context, not a repeated one
        for name, parameter in policy.model.named_parameters():
            if "norm" not in name:
                parameter.normal_(std=0.3)
    pad = policy.tokenizer.pad_token_id

    def greedy(tail_after):
        policy.tail_after = tail_after
        return policy.generate(["go left", "UP"], num_samples=3, max_new_tokens=24, temperature=1e-4, seed=0)

    if stop_row is not None:  # a stop text that some rows write before the seam and some after it
        free = greedy(None)[2]
        row = free[stop_row][free[stop_row] != pad].tolist()
        policy.stop_strings = (policy.tokenizer.decode(row[6:9]),)
    one_texts, one_prompts, one = greedy(None)
    for tail_after in (2, 4, 10):
        texts, prompts, two = greedy(tail_after)
        assert texts == one_texts
        assert prompts.tolist() == one_prompts.tolist()
        assert two.tolist() == one.tolist()
    lengths = (one != pad).sum(dim=1).tolist()
    assert max(lengths) == 24  # rows continued past every seam
    assert len(set(one[:, 5].tolist())) > 1  # and what they wrote depends on their context
    if stop_row is not None:
        assert min(lengths) <= 9  # some stopped at the stop text: after seams 2 and 4, before 10


def test_every_eos_the_model_declares_ends_a_sample_and_the_pad_never_does():
    """A chat model's end of turn is not always its tokenizer's EOS (the GGUF-converted SmolLM2 names
    <|im_start|>; Llama 3 and Qwen declare several): each id of the generation config ends a sample,
    as the tokenizer's does, and is kept as its last token; the pad token is never one."""
    policy = new_policy(TEXTS, ModelSpec(vocab_size=300, hidden_size=32, layers=2, heads=2, max_positions=128), seed=0)
    pad, eos = policy.tokenizer.pad_token_id, policy.tokenizer.eos_token_id
    _, _, free = _sample(policy)
    first = free[0].tolist()
    at = next(k for k in range(2, len(first)) if first[k] not in first[:k])  # a token new at position k
    other = first[at]  # declared an end of turn below
    assert other not in (pad, eos)
    policy.model.generation_config.eos_token_id = [eos, other, pad]
    assert policy.stop_token_ids == (eos, other)
    _, _, ended = _sample(policy)
    for row, free_row in zip(ended.tolist(), free.tolist(), strict=True):
        length = next((i for i, t in enumerate(row) if t == pad), len(row))
        assert row[:length] == free_row[:length]  # the same tokens up to the end
        assert all(t == pad for t in row[length:])
        assert sum(t in (eos, other) for t in row[:length]) <= 1
    assert ended[0, at].item() == other
    assert (ended[0, at + 1 :] == pad).all()  # the first sample ended at the declared end of turn


def test_the_model_spec_sizes_the_default_model_and_refuses_bad_sizes():
    from vpo_core.errors import ConfigError
    from vpo_engines.local.config import parse_overrides

    config = parse_overrides(["hidden_size=32", "layers=1", "heads=2", "vocab_size=300"])
    spec = ModelSpec.from_run(config, max_positions=64)
    assert spec == ModelSpec(vocab_size=300, hidden_size=32, layers=1, heads=2, max_positions=64)
    model = new_policy(TEXTS, spec, seed=0).model.config
    assert (model.hidden_size, model.num_hidden_layers, model.num_attention_heads) == (32, 1, 2)
    assert (model.intermediate_size, model.max_position_embeddings) == (128, 64)
    with pytest.raises(ConfigError, match="heads must divide hidden_size"):
        ModelSpec(vocab_size=300, hidden_size=32, layers=1, heads=3)
    with pytest.raises(ConfigError, match="layers must be >= 1"):
        ModelSpec(vocab_size=300, hidden_size=32, layers=0, heads=2)
