"""engine=trl on CPU: a few real GRPOTrainer steps whose loss reads vpo-core's advantages."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl", reason="TRL is opt-in: `uv sync --group trl` (CI installs it)")

from vpo_core.advantages import AdvantageConfig, RolloutBatch, compute_advantages
from vpo_engines.trl.train import TRLTrainConfig, build_trainer, main
from vpo_engines.trl.trainer import VPOGRPOTrainer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # text_stats_env (an env id of the module:Class form)

pytestmark = pytest.mark.slow


class Recording(VPOGRPOTrainer):
    """Keeps each batch's rewards and advantages, and what TRL's loss receives (the real loss still runs)."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        batch = self.last_batch
        record = (
            batch.stacked(training=True),
            list(batch.keys),
            self.last_advantages,
            output["advantages"].cpu().numpy(),
        )
        self.batches = [*getattr(self, "batches", []), record]
        return output

    def _compute_loss(self, model, inputs):
        self.loss_inputs = [*getattr(self, "loss_inputs", []), inputs["advantages"].detach().cpu().numpy().copy()]
        return super()._compute_loss(model, inputs)


@pytest.mark.parametrize(("method", "sampler"), [("vpo", "sobol"), ("grpo", "dirichlet")])
def test_trl_loss_uses_compute_advantages_on_the_env_rewards(tmp_path, method, sampler):
    config = TRLTrainConfig(
        env="maze-v1",
        env_options={"train_size": 12, "test_size": 2},
        method=method,
        out=str(tmp_path / "run"),
        steps=2,
        prompts_per_step=2,
        group_size=4,
        mini_batches=2,
        lr=1e-4,
        num_weights=16,
        weight_sampler=sampler,
        max_new_tokens=24,
        vocab_size=400,
        hidden_size=32,
        layers=1,
        heads=2,
    )
    trainer = build_trainer(config)
    trainer.__class__ = Recording
    trainer.train()
    assert len(trainer.batches) == 2  # two generation batches, each split into two optimizer steps
    task_ids = {t.id for t in trainer.scorer.tasks}
    for step, (rewards, keys, advantages, sent) in enumerate(trainer.batches):
        assert rewards.shape == (2, 4, 3 if method == "vpo" else 1, 4)
        assert all(k.startswith(f"{step * 2}:{b}:") and k.split(":", 2)[2] in task_ids for b, k in enumerate(keys))
        expected = compute_advantages(
            RolloutBatch.of(rewards, w_star=trainer.scorer.env.reward_spec.w_star, keys=keys),
            AdvantageConfig.parse(method, seed=0, num_weights=16, weight_sampler=sampler),
        ).reshape(-1)
        np.testing.assert_allclose(advantages, expected, atol=1e-12)
        np.testing.assert_allclose(sent, advantages, atol=1e-6)  # one process: the whole batch is local
    # the loss saw exactly those advantages (TRL shuffles a generation batch before splitting it into steps)
    seen = np.sort(np.concatenate(trainer.loss_inputs).reshape(-1))
    sent_all = np.sort(np.concatenate([a for _, _, a, _ in trainer.batches]))
    np.testing.assert_allclose(seen, sent_all, atol=1e-6)


def test_bad_options_are_refused_before_anything_runs(tmp_path, capsys):
    assert main(["mini_batches=3", f"out={tmp_path / 'run'}"]) == 2
    assert "mini_batches=3 must divide" in capsys.readouterr().err
    assert main(["clip_ratio_c=1.1", f"out={tmp_path / 'run'}"]) == 2
    assert "clip_ratio_c must be > 1 + clip_ratio" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def _tiny(tmp_path, **overrides):
    options = {
        "env": "text_stats_env:TextStatsEnv",
        "method": "vpo",
        "out": str(tmp_path / "run"),
        "steps": 2,
        "prompts_per_step": 2,
        "group_size": 4,
        "mini_batches": 2,
        "lr": 1e-4,
        "num_weights": 16,
        "max_new_tokens": 20,
        "vocab_size": 300,
        "hidden_size": 32,
        "layers": 1,
        "heads": 2,
        "eval_tasks": 0,
    }
    return TRLTrainConfig(**{**options, **overrides})


def test_trl_logs_the_advantages_it_trains_on_not_its_own(tmp_path):
    """TRL logs its group-normalised advantages of the scalar reward (the completions table) before the
    override replaces them; what is logged must be what the loss read."""
    import pandas as pd

    config = _tiny(tmp_path)
    trainer = build_trainer(config)
    trainer.__class__ = Recording
    trainer.train()
    tables = sorted((tmp_path / "run" / "completions").glob("completions_*.parquet"))
    assert len(tables) == 4  # one per optimizer step: two per generation batch
    for index, path in enumerate(tables):
        table = pd.read_parquet(path)
        _, _, advantages, _ = trainer.batches[index // 2]
        logged = table["advantage"].to_numpy()
        np.testing.assert_array_equal(logged, advantages)  # VPO's, in TRL's order
        # TRL's own (scale_rewards="none"): the best-of-m reward minus its group mean; here it differs
        reward = table["env_best_of_m"].to_numpy().reshape(-1, config.group_size)
        trl_own = (reward - reward.mean(axis=1, keepdims=True)).reshape(-1)
        assert np.abs(logged - trl_own).max() > 1e-3
        assert table["prompt"].str.startswith("<|user|>").all()  # the chat-rendered prompt
    # the loss read exactly the logged values (float32), batch by batch (TRL shuffles within a batch)
    for batch, (_, _, advantages, _) in enumerate(trainer.batches):
        seen = np.sort(np.concatenate(trainer.loss_inputs[2 * batch : 2 * batch + 2]).reshape(-1))
        np.testing.assert_array_equal(seen, np.sort(advantages.astype(np.float32)))


class RecordingIds(Recording):
    """Also keeps each batch's completion ids (as TRL trains on them: the mask's tokens)."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        ids, mask = output["completion_ids"].cpu(), output["completion_mask"].cpu().bool()
        self.completions = [
            *getattr(self, "completions", []),
            *(row[keep].tolist() for row, keep in zip(ids, mask, strict=True)),
        ]
        return output


def test_trl_completions_end_at_the_stop_string(tmp_path):
    """With stop strings, a completion ends at the token that completes the first one: what follows (the
    padding transformers writes after a stopped row, which TRL's EOS mask would keep) is not trained on."""
    config = _tiny(tmp_path, steps=1, mini_batches=1)
    trainer = build_trainer(config)
    tok = trainer.processing_class
    stop = "e"  # a common letter: most samples write it within the budget
    trainer.stop_strings = (stop,)
    trainer.__class__ = RecordingIds
    trainer.train()
    assert len(trainer.completions) == 8
    stopped = 0
    for ids in trainer.completions:
        assert ids
        if stop in tok.decode(ids, skip_special_tokens=True):
            stopped += 1
            # ends at the completing token: no padding after it (TRL's EOS mask would keep the pad)
            assert stop not in tok.decode(ids[:-1], skip_special_tokens=True)
        else:
            assert len(ids) == config.max_new_tokens or ids[-1] in trainer.eos_token_ids
    assert stopped >= 2
    ids = tok("ab e cd e", add_special_tokens=False)["input_ids"] + [tok.pad_token_id] * 3
    cut = trainer._cut_at_stop(ids)  # at token granularity: the completing token may carry more text
    assert stop in tok.decode(cut)
    assert stop not in tok.decode(cut[:-1])
    assert len(cut) < len(tok("ab e cd e", add_special_tokens=False)["input_ids"])  # the first occurrence
    assert trainer._cut_at_stop(ids[:1]) == ids[:1]  # no stop string: unchanged


TINY_ARGS = ["env=text_stats_env:TextStatsEnv", "steps=1", "prompts_per_step=1", "group_size=2", "mini_batches=1"]
TINY_ARGS += ["max_new_tokens=8", "vocab_size=300", "hidden_size=16", "layers=1", "heads=2", "eval_tasks=0"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["env=nope-v9"], "nope-v9"),  # an unknown env id
        (["model=/nonexistent/model"], "/nonexistent/model is not a directory"),
        (["temperature=0"], "temperature must be"),
    ],
)
def test_a_user_error_is_one_line_and_exit_code_2(tmp_path, capsys, args, message):
    assert main([*TINY_ARGS, *args, f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ")
    assert message in err[-1]
    assert not any("Traceback" in line for line in err)


def test_a_value_error_deep_inside_a_run_keeps_its_traceback(tmp_path, monkeypatch):
    from vpo_core.errors import UserError
    from vpo_engines.trl.trainer import EnvScorer

    def broken(self, prompts, completions, task_index, **_):
        raise ValueError("substring not found")

    monkeypatch.setattr(EnvScorer, "__call__", broken)  # TRL's scoring of the first batch
    with pytest.raises(ValueError, match="substring not found") as raised:
        main([*TINY_ARGS, f"out={tmp_path / 'run'}"])
    assert not isinstance(raised.value, UserError)
    assert raised.traceback[-1].name == "broken"
