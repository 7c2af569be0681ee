"""The local engine and TRL train the real SmolLM2-135M-Instruct checkpoint through ``apps/train.py`` (issue 36).

Each engine runs the README's command, ``apps/train.py model=<the folder> env=maze-v1 method=vpo`` (multi,
m = 3), with tiny settings: two RL steps of one prompt and two completions, twelve new tokens, and an
evaluation of one test task before and after. The run's report and metrics must have the keys a run of
the engine's default model has; the prompts must be SmolLM2's chat template; generation must end at
``<|im_end|>`` (the model's end of turn, which the converted tokenizer does not call its EOS) or the
answer's stop string; TRL's logged advantages must be the ones its loss read. Two smaller checks run
the checkpoint directly: where a sample ends, and that the local engine's log-probabilities are those
of the distribution it samples from when the loader has added a pad row.

The checkpoint's weights are de-quantised Q4_1: these tests check plumbing, never quality.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[4]
IM_END = 2  # <|im_end|>: SmolLM2's end of turn (the model's eos_token_id)
TINY = [
    "env=maze-v1",
    "method=vpo",
    "env.train_size=8",
    "env.test_size=1",
    "seed=0",
    "steps=2",
    "prompts_per_step=1",
    "group_size=2",
    "mini_batches=1",
    "max_new_tokens=12",
    "num_weights=8",
    "eval_tasks=1",
    "eval_samples=3",
]
DEFAULT_MODEL = {  # the engine's own small model, as small as it gets
    "local": ["warmup_steps=2", "warmup_batch=2", "hidden_size=16", "layers=1", "heads=2", "vocab_size=300"],
    "trl": ["hidden_size=16", "layers=1", "heads=2", "vocab_size=300"],
}


def _train(argv: list[str]) -> int:
    """``vpo train`` (apps/train.py is its alias) with `argv`: the command the README shows."""
    from vpo_engines.cli import main as vpo

    return vpo(["train", *argv])


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _shape(report: dict) -> dict:
    """A report's keys, and the keys of its dict values (the evaluations' metrics, the config, the timings)."""
    return {key: sorted(value) if isinstance(value, dict) else None for key, value in report.items()}


# ------------------------------------------------------------------------------------ the local engine
@pytest.fixture(scope="module")
def local_runs(smollm2, tmp_path_factory):
    """The local engine on SmolLM2 (every `Policy.generate` call recorded) and on its default model."""
    from vpo_engines.models.policy import Policy

    calls = []
    generate = Policy.generate_with_log_probs  # what rollouts call, and what `generate` calls

    def recording(self, prompts, **kwargs):
        texts, prompt_ids, response, log_probs = generate(self, prompts, **kwargs)
        calls.append(
            {
                "prompts": list(prompts),
                "texts": texts,
                "response": response.clone(),
                "max_new_tokens": kwargs["max_new_tokens"],
                "stop_token_ids": self.stop_token_ids,
                "stop_strings": self.stop_strings,
                "pad": self.tokenizer.pad_token_id,
            }
        )
        return texts, prompt_ids, response, log_probs

    root = tmp_path_factory.mktemp("local")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Policy, "generate_with_log_probs", recording)
        code = _train([f"model={smollm2}", *TINY, f"out={root / 'real'}"])
    assert code == 0
    default = _train([*TINY, *DEFAULT_MODEL["local"], f"out={root / 'default'}"])
    assert default == 0
    return root / "real", root / "default", calls


def test_the_local_engine_trains_and_evaluates_the_real_model_like_its_default_model(local_runs, smollm2):
    real, default, calls = local_runs
    for name in ("config.json", "metrics.jsonl", "report.json", "report.md", "eval_init.json", "eval_final.json"):
        assert (real / name).is_file(), name
    assert (real / "checkpoint" / "model" / "model.safetensors").is_file()
    report, default_report = (json.loads((run / "report.json").read_text()) for run in (real, default))
    assert report["config"]["model"] == str(smollm2)
    assert _shape(report)["warm_started"] == _shape(default_report)["warm_started"]
    assert set(report) == set(default_report)
    assert set(report["phase_seconds"]) <= set(default_report["phase_seconds"])  # no warm-up for a given model
    records, default_records = _records(real / "metrics.jsonl"), _records(default / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1]
    assert [sorted(r) for r in records] == [sorted(r) for r in default_records]
    assert all(np.isfinite(r["actor/pg_loss"]) and np.isfinite(r["actor/kl_loss"]) for r in records)
    # the rollouts (2 steps) and the evaluations (before and after) all went through Policy.generate_with_log_probs
    assert len(calls) == 4


def test_the_local_engine_renders_smollm2s_template_and_stops_at_its_end_of_turn(local_runs):
    _, _, calls = local_runs
    for call in calls:
        for prompt in call["prompts"]:
            assert prompt.startswith("<|im_start|>system\n"), prompt[:80]
            assert "<|im_start|>user\nNavigate a 9x9 maze" in prompt
            assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
        # <|im_end|> ends a sample although the converted tokenizer's EOS is <|im_start|>
        assert IM_END in call["stop_token_ids"]
        assert call["stop_strings"] == ("</route_3>",)  # maze, multi, m = 3: the last answer's closing tag
        for row, text in zip(call["response"].tolist(), call["texts"], strict=True):
            length = next((i for i, t in enumerate(row) if t == call["pad"]), len(row))
            assert all(t == call["pad"] for t in row[length:])  # padding only after the end
            body = row[:length]
            ends = [i for i, t in enumerate(body) if t in call["stop_token_ids"]]
            assert ends in ([], [length - 1])  # an end-of-turn token only as the last token
            if not ends and "</route_3>" not in text:
                assert length == call["max_new_tokens"]  # else it ran to the budget


# ------------------------------------------------------------------------------------ TRL
@pytest.fixture(scope="module")
def trl_runs(smollm2, tmp_path_factory):
    """TRL on SmolLM2 (what each loss call read recorded, with the trainer) and on its default model."""
    pytest.importorskip("trl", reason="TRL is opt-in: `uv sync --group trl`")
    from vpo_engines.trl.trainer import VPOGRPOTrainer

    seen = {"advantages": [], "trainer": None}
    compute_loss = VPOGRPOTrainer._compute_loss

    def recording(self, model, inputs):
        seen["trainer"] = self
        seen["advantages"].append(inputs["advantages"].detach().cpu().numpy().copy())
        return compute_loss(self, model, inputs)

    root = tmp_path_factory.mktemp("trl")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(VPOGRPOTrainer, "_compute_loss", recording)
        code = _train(["engine=trl", f"model={smollm2}", *TINY, f"out={root / 'real'}"])
    assert code == 0
    default = _train(["engine=trl", *TINY, *DEFAULT_MODEL["trl"], f"out={root / 'default'}"])
    assert default == 0
    return root / "real", root / "default", seen


def test_trl_trains_and_evaluates_the_real_model_like_its_default_model(trl_runs, smollm2):
    real, default, _ = trl_runs
    for name in ("config.json", "metrics.jsonl", "report.json", "report.md", "best_at_k.png"):
        assert (real / name).is_file(), name
    assert (real / "final_model" / "model.safetensors").is_file()
    report, default_report = (json.loads((run / "report.json").read_text()) for run in (real, default))
    assert report["config"]["model"] == str(smollm2)
    assert _shape(report) == _shape(default_report)
    records, default_records = _records(real / "metrics.jsonl"), _records(default / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 2]  # two optimizer steps, then TRL's summary
    assert [sorted(r) for r in records] == [sorted(r) for r in default_records]


def test_trl_renders_smollm2s_template_stops_at_its_end_of_turn_and_logs_what_it_trained_on(trl_runs):
    import pandas as pd

    real, _, seen = trl_runs
    trainer = seen["trainer"]
    assert IM_END in trainer.eos_token_ids  # <|im_end|> ends a completion (TRL adds the model's eos ids)
    assert trainer.stop_strings == ("</route_3>",)
    tables = sorted((real / "completions").glob("completions_*.parquet"))
    assert len(tables) == 2 == len(seen["advantages"])
    for table_path, trained in zip(tables, seen["advantages"], strict=True):
        table = pd.read_parquet(table_path)
        assert table["prompt"].str.startswith("<|im_start|>system\n").all()
        assert table["prompt"].str.endswith("<|im_start|>assistant\n").all()
        for text in table["completion"]:
            assert "</route_3>" not in text or text.endswith("</route_3>")  # nothing after the stop string
        # the completions table's advantages are the ones the loss read (float32 there)
        np.testing.assert_array_equal(np.sort(table["advantage"].to_numpy(np.float32)), np.sort(trained))


# ------------------------------------------------------------------------------------ the checkpoint
def _question(policy) -> list[str]:
    messages = [{"role": "user", "content": "What is 2+3? Answer with a number."}]
    return [policy.prompt_text(messages)]


def test_a_sample_ends_at_im_end_or_at_a_stop_string(smollm2):
    from vpo_engines.models.policy import load_policy

    policy = load_policy(smollm2)
    # whatever EOS the tokenizer names (the GGUF conversion's names <|im_start|>), the model's <|im_end|> ends a sample
    assert IM_END in policy.stop_token_ids
    settings = {"num_samples": 1, "max_new_tokens": 24, "temperature": 0.05, "seed": 0}
    texts, _, response = policy.generate(_question(policy), **settings)
    row = response[0].tolist()
    length = row.index(IM_END) + 1  # the answer ends its turn with <|im_end|> well within 24 tokens
    assert all(t == policy.tokenizer.pad_token_id for t in row[length:])
    assert "5" in texts[0]
    assert "<|im_start|>" not in policy.tokenizer.decode(row[:length])
    policy.stop_strings = ("3 =",)  # transformers' stop-string criterion with the real tokenizer
    texts, _, response = policy.generate(_question(policy), **settings)
    assert texts[0].rstrip().endswith("3 ="), texts


def test_log_probs_are_the_sampling_distributions_with_an_added_pad_row(smollm2):
    """The loader adds a pad row to SmolLM2's embeddings; sampling never draws it, so the ratio's log-probs
    must not count it either. The row is made to carry most of the probability, so counting it shows."""
    from vpo_engines.models.policy import load_policy

    policy = load_policy(smollm2)
    pad = policy.tokenizer.pad_token_id
    embeddings = policy.model.get_input_embeddings().weight
    assert pad == embeddings.shape[0] - 1 == 49152  # the row the loader added
    with torch.no_grad():  # tied to the output layer: the pad's logit is now the largest
        embeddings[pad] = 4.0 * embeddings[IM_END]
    enc = policy.tokenizer(_question(policy), return_tensors="pt", add_special_tokens=False)
    torch.manual_seed(0)
    with torch.no_grad():
        out = policy.model.generate(  # as Policy._decode samples: the pad suppressed, no top-k
            **enc,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            max_new_tokens=6,
            min_new_tokens=6,
            pad_token_id=pad,
            suppress_tokens=[pad],
            output_scores=True,
            return_dict_in_generate=True,
        )
    response = out.sequences[:, enc["input_ids"].shape[1] :]
    assert pad not in response.tolist()[0]
    scores = torch.stack(out.scores, dim=1).float()  # the processed logits the tokens were drawn from
    sampled = torch.gather(F.log_softmax(scores, dim=-1), 2, response.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        logp, _ = policy.log_probs(enc["input_ids"], response)
        full = policy.model(input_ids=torch.cat([enc["input_ids"], response], dim=1)).logits.float()
    counted = F.log_softmax(full[:, enc["input_ids"].shape[1] - 1 : -1], dim=-1)
    counted = torch.gather(counted, 2, response.unsqueeze(-1)).squeeze(-1)
    assert float((counted - sampled).abs().max()) > 1.0  # counting the pad row would change them a lot
    torch.testing.assert_close(logp, sampled, rtol=0, atol=1e-3)
