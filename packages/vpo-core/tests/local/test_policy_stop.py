"""A policy's stop strings end its samples at the stop text, with the same tokens before it."""

from __future__ import annotations

import pytest

import vpo_core
from vpo_core.adapters.local.policy import answer_stops, new_policy

TEXTS = ["go left then right", "UP DOWN LEFT RIGHT <route_1> </route_1>", "a maze of 9 by 9 cells"] * 4


def _sample(policy):
    return policy.generate(["go left", "UP"], num_samples=4, max_new_tokens=24, temperature=1.0, seed=0)


def test_a_stop_string_ends_the_sample_after_its_first_occurrence_and_changes_nothing_before_it():
    policy = new_policy(TEXTS, vocab_size=300, hidden_size=32, layers=2, heads=2, seed=0, max_positions=128)
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
