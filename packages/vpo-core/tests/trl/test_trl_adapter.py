"""engine=trl on CPU: a few real GRPOTrainer steps whose loss reads vpo-core's advantages."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("trl", reason="TRL is opt-in: `uv sync --group trl` (CI installs it)")

from vpo_core.adapters.trl.train import TRLTrainConfig, build_trainer, main
from vpo_core.adapters.trl.trainer import VPOGRPOTrainer
from vpo_core.advantages import compute_advantages

pytestmark = pytest.mark.slow


class Recording(VPOGRPOTrainer):
    """Keeps each batch's rewards and advantages, and what TRL's loss receives (the real loss still runs)."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        record = (self.last_rewards, self.last_keys, self.last_advantages, output["advantages"].cpu().numpy())
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
            method,
            rewards,
            w_star=trainer.scorer.env.reward_spec.w_star,
            seed=0,
            group_keys=keys,
            num_weights=16,
            weight_sampler=sampler,
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
