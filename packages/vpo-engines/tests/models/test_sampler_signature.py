"""Every sampler of the model floor has one ``sample`` signature, the `Sampler` protocol's.

``sample(prompts, *, num_samples, settings: SamplingSettings, seed=None)``: the sampling settings travel as
one record, so no sampler, caller or wrapper spells out temperature, top-p and the token budget again.
`VllmSampler` is checked by its signature on any machine: `vpo_engines.models.vllm` imports vLLM only when a
sampler is built or samples.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import vpo_core
from vpo_core.evaluation import evaluate_policy
from vpo_core.evaluation.sampling import Sampler
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.evaluate import main
from vpo_engines.models.openai import OpenAISampler
from vpo_engines.models.policy import Policy
from vpo_engines.models.vllm import VllmSampler

SAMPLERS = [Policy, OpenAISampler, VllmSampler]


def _parameters(function: object) -> list[tuple[str, object, object, object]]:
    """(name, kind, default, annotation) of each parameter; annotations are the source's strings."""
    return [(p.name, p.kind, p.default, p.annotation) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda c: c.__name__)
def test_every_sampler_has_the_protocols_sample_signature(sampler):
    assert _parameters(sampler.sample) == _parameters(Sampler.sample)
    assert inspect.signature(sampler.sample).return_annotation == "list[str]"


def test_the_signature_takes_the_settings_record_and_no_loose_sampling_keywords():
    names = [name for name, *_ in _parameters(Sampler.sample)]
    assert names == ["self", "prompts", "num_samples", "settings", "seed"]
    keyword_only = [name for name, kind, *_ in _parameters(Sampler.sample) if kind is inspect.Parameter.KEYWORD_ONLY]
    assert keyword_only == ["num_samples", "settings", "seed"]


class _Recording:
    """A sampler that records each call and answers every prompt with its maze's reference route."""

    def __init__(self, env, tasks):
        self.calls: list[tuple[int, int, SamplingSettings, int | None]] = []
        self.routes = {
            env.render_prompt(t, mode="single", m=1)[-1]["content"]: env.reference_completion(t) for t in tasks
        }

    def prompt_text(self, messages):
        return messages[-1]["content"]

    def sample(self, prompts, *, num_samples, settings, seed=None):
        self.calls.append((len(prompts), num_samples, settings, seed))
        return [self.routes[p] for p in prompts for _ in range(num_samples)]


def test_evaluate_policy_passes_one_settings_record_and_reports_its_fields():
    env = vpo_core.make("maze-v1", train_size=2, test_size=3)
    tasks = env.tasks("test")
    settings = SamplingSettings(temperature=0.7, top_p=0.9, max_new_tokens=12)
    sampler, done = _Recording(env, tasks), []
    result = evaluate_policy(
        sampler, env, tasks, name="x", mode="single", m=1, samples=2, seeds=2, settings=settings,
        prompts_per_batch=2, progress=done.append,
    )  # fmt: skip
    # chunks of two prompts, each seed s sampling chunk `start` with seed 10000 s + start; the record passed as is
    assert sampler.calls == [
        (2, 2, settings, 0),
        (1, 2, settings, 2),
        (2, 2, settings, 10_000),
        (1, 2, settings, 10_002),
    ]
    assert done == [2, 1, 2, 1]  # progress is a callback: tasks done after each batch
    assert result.settings == {"samples": 2, "seeds": 2, "temperature": 0.7, "top_p": 0.9, "max_new_tokens": 12}
    assert list(result.settings) == ["samples", "seeds", "temperature", "top_p", "max_new_tokens"]
    assert result.rewards.shape == (3, 4, 1, env.reward_spec.dim)
    for t, task in enumerate(tasks):  # every candidate of a task is its reference route, scored by the env
        for column in range(4):
            np.testing.assert_array_equal(
                result.rewards[t, column, 0], env.score(task, env.reference_completion(task))[0]
            )


@pytest.mark.parametrize(("option", "needle"), [("temperature=0", "temperature must be"), ("top_p=0", "top_p must be")])
def test_the_evaluation_command_refuses_settings_no_sampler_takes(tmp_path, capsys, option, needle):
    argv = ["env=maze-v1", "base_url=http://127.0.0.1:9/v1", "template_options=none", f"out={tmp_path}", option]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert needle in err
