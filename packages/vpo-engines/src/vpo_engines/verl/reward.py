"""The ``vpo`` reward manager: parse m candidates with the env, score them, return the method's scalar.

Each trajectory is scored on its own, in whichever reward worker veRL picks, as a `RolloutBatch` of
one group of one rollout (`vpo_core.batch.score_groups`), so a group's weights must be rebuilt
identically everywhere: VPO draws its K weights keyed by ``(seed, uid)``, and every rollout of the
group shares the uid. The options are the run's ``algorithm.vpo`` block (``seed``, ``num_weights``,
``alpha``, ``weight_sampler``, ...), parsed into an `AdvantageConfig` with the row's method and m
(`vpo_engines.verl.options.advantage_config`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from vpo_core.advantages import rollout_scalars
from vpo_core.batch import score_groups
from vpo_core.env import TextEnv
from vpo_core.metrics import reward_diversity
from vpo_core.registry import make
from vpo_engines.models.chat import template_prefill
from vpo_engines.verl.options import advantage_config, vpo_block

__all__ = ["score_trajectory"]


@lru_cache(maxsize=16)
def _env(env_id: str, config_json: str) -> TextEnv[Any, Any]:
    return make(env_id, **json.loads(config_json))


def score_trajectory(text: str, extra_info: dict[str, Any], uid: str, vpo: Mapping[str, Any]) -> dict[str, Any]:
    """The reward of one trajectory.

    Args:
        text: The decoded response.
        extra_info: The row's ``extra_info`` written by `vpo_engines.verl.export`.
        uid: The group id veRL gives the G rollouts of one prompt.
        vpo: The run's ``algorithm.vpo`` block (`vpo_engines.verl.options.advantage_config`).

    Returns:
        ``{"reward_score": float, "reward_extra_info": {...}}``; extras have the same keys and
        scalar values for every trajectory of an env (``r_0..r_{d-1}`` are the per-dimension means
        over the candidates, the GDPO channels).
    """
    env = _env(str(extra_info["env_id"]), str(extra_info.get("env_config") or "{}"))
    config = advantage_config(vpo, method=str(extra_info["method"]), m=int(extra_info["m"]))
    task = env.tasks(str(extra_info["split"]))[int(extra_info["index"])]
    goal = extra_info.get("goal_weights")
    batch = score_groups(  # one `rewards` call
        env,
        [task],
        [text],
        mode=config.method.mode,
        m=config.m,
        keys=[uid],
        goal_weights=None if goal is None or len(goal) == 0 else [np.asarray(goal, dtype=np.float64)],
    )
    assert batch.specs is not None
    assert batch.answered is not None
    spec, raw = batch.specs[0], batch.rewards[0][0]  # raw: (m, d)
    scalar = rollout_scalars(batch, config)
    score = float(spec.scalarize(raw[0])) if config.method.normalizer == "gdpo" else float(scalar.reshape(-1)[0])
    w_scores = spec.scalarize(raw)
    # veRL needs the same extra keys for every trajectory: one r_i per dimension of the env's class-level spec,
    # zero-padded where a task has fewer (LiveCodeBench: one dimension per test, at most 32)
    means = raw.mean(axis=0)
    extras: dict[str, Any] = {
        f"r_{i}": float(means[i]) if i < spec.dim else 0.0 for i in range(max(spec.dim, env.reward_spec.dim))
    }
    extras.update(
        {
            "best_of_m": float(w_scores.max()),
            "mean_w_star": float(w_scores.mean()),
            "parsed": float(batch.answered[0, 0]),
            # reward-space diversity of this rollout's m candidates (the group's pool diversity needs the
            # whole group, which no reward worker sees; compute it from reward_matrix in the logs)
            "candidate_diversity": reward_diversity(raw) if raw.shape[0] > 1 else 0.0,
            "reward_matrix": json.dumps(raw.round(6).tolist()),
        }
    )
    return {"reward_score": score, "reward_extra_info": extras}


def _make_manager_class() -> type:
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

    class VPORewardManager(RewardManagerBase):
        """Reward manager for every method of the paper (``reward.reward_manager.name=vpo``)."""

        def __init__(
            self, config, tokenizer, compute_score=None, reward_router_address=None, reward_model_tokenizer=None
        ) -> None:
            super().__init__(config, tokenizer, compute_score)
            algorithm = config.get("algorithm", {}) if hasattr(config, "get") else {}
            self.vpo = vpo_block(algorithm)
            advantage_config(self.vpo, method="vpo")  # check the block when the manager is made, not per trajectory
            data = config.get("data", {}) if hasattr(config, "get") else {}
            # the env scores the whole assistant turn: what the template pre-fills, then the generated text
            self.prefill = template_prefill(tokenizer, dict(data.get("apply_chat_template_kwargs", {}) or {}))

        async def run_single(self, data):
            loop = asyncio.get_running_loop()
            item = data[-1:][0]
            responses = item.batch["responses"]
            length = int(item.batch["attention_mask"][-responses.shape[-1] :].sum())
            text = await loop.run_in_executor(
                None, lambda: self.tokenizer.decode(responses[:length], skip_special_tokens=True)
            )
            extra_info = dict(item.non_tensor_batch["extra_info"])
            uid = str(item.non_tensor_batch["uid"])
            return await loop.run_in_executor(
                None,
                lambda: score_trajectory(self.prefill + text, extra_info, uid, self.vpo),
            )

    return VPORewardManager
