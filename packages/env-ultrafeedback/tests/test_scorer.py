"""The reward model: ArmoRM's loading path on a tiny local model, batching, bounds, the scoring server."""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest

from env_ultrafeedback import DIMENSIONS, ScorerClient, ScoringServer, ScoringServerError, WeightsNotFoundError
from env_ultrafeedback._scorer import ArmoRMScorer
from vpo_core.testing import check_env

PROMPTS = ["Explain why the sky appears blue during the day.", "Write a haiku about autumn leaves."] * 4
RESPONSES = [
    "Rayleigh scattering.",
    "Crimson leaves drifting",
    "Because the ocean reflects onto it, which is a common misconception about the sky's colour.",
    "",
    "x",
    "Leaves fall down in fall.",
    "Blue light scatters more strongly off air molecules than red light does.",
    "whispers on the cooling wind",
]


@pytest.fixture(scope="module")
def scorer(tiny_rm):
    return ArmoRMScorer(str(tiny_rm), batch_size=3, scale=1.0, offset=0.5, max_length=64)


def test_head_shape_and_dimensions(scorer):
    assert scorer.names == DIMENSIONS
    assert scorer.model.regression_layer.out_features == 19
    assert scorer.score(PROMPTS, RESPONSES).shape == (8, 5)


def test_batched_scoring_equals_one_by_one(scorer):
    batched = scorer.raw_scores(PROMPTS, RESPONSES)
    single = np.concatenate([scorer.raw_scores([p], [r]) for p, r in zip(PROMPTS, RESPONSES, strict=True)])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    assert np.ptp(batched, axis=0).min() > 0  # the rows differ: the check compares something


def test_rewards_are_the_clipped_affine_map_and_in_bounds(scorer):
    raw = scorer.raw_scores(PROMPTS, RESPONSES)
    rewards = scorer.score(PROMPTS, RESPONSES)
    np.testing.assert_allclose(rewards, np.clip(raw + 0.5, 0.0, 1.0))
    assert rewards.dtype == np.float64
    assert np.all((rewards >= 0.0) & (rewards <= 1.0))
    assert ((raw + 0.5 < 0) | (raw + 0.5 > 1)).any(), "the tiny head reaches outside [0, 1]: the clip is exercised"


def test_bad_batches_are_named(scorer):
    with pytest.raises(ValueError, match="2 prompts but 1 responses"):
        scorer.score(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="must be strings"):
        scorer.score(["a"], [None])


def test_missing_weights_say_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(WeightsNotFoundError, match=r"hf download RLHFlow/ArmoRM-Llama3-8B-v0\.1"):
        ArmoRMScorer(str(tmp_path / "no-such-model"))


def test_server_and_client_score_like_the_model(scorer):
    with ScoringServer(scorer, port=0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        client = ScorerClient(server.url, names=DIMENSIONS)
        assert client.names == DIMENSIONS
        np.testing.assert_allclose(client.score(PROMPTS, RESPONSES), scorer.score(PROMPTS, RESPONSES), atol=1e-6)
        assert client.score([], []).shape == (0, 5)
        bad = urllib.request.Request(server.url + "/score", data=json.dumps({"prompts": ["a"]}).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(bad, timeout=10)
        assert info.value.code == 400
        assert "responses" in json.loads(info.value.read())["error"]
        with pytest.raises(ScoringServerError, match="expects"):
            _ = ScorerClient(server.url, names=("a", "b")).names


def test_env_through_the_server_passes_check_env_and_matches_in_process(tiny_rm, scorer, make_env):
    with ScoringServer(scorer, port=0) as server:
        env = make_env(scorer_url=server.url)
        check_env(env)
        local = make_env(tiny_rm)
        task = env.tasks("test")[1]
        text = "<response_1>First reply.</response_1><response_2>Second, longer reply here.</response_2>"
        np.testing.assert_allclose(
            env.score(task, text, mode="multi", m=3), local.score(task, text, mode="multi", m=3), atol=1e-6
        )


def test_without_a_server_the_client_says_how_to_start_one():
    client = ScorerClient("http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(ScoringServerError, match="env-ultrafeedback-rm --port 9"):
        client.score(["a"], ["b"])


def test_the_docstring_armorms_remote_code_imports_is_restored(monkeypatch):
    from transformers.models.llama import modeling_llama

    from env_ultrafeedback._scorer import _remote_code_compat

    monkeypatch.delattr(modeling_llama, "LLAMA_INPUTS_DOCSTRING", raising=False)
    _remote_code_compat()
    assert modeling_llama.LLAMA_INPUTS_DOCSTRING == ""
