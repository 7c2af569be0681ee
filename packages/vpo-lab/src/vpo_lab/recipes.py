"""Named recipes of the experiment grid (``uv run apps/experiment.py env=<id> recipe=<name>``).

A recipe is a set of `vpo_lab.experiment.ExperimentConfig` options (option name -> value, written on the
command line as ``key=value`` before the user's own options, which win). Recipes name repository paths
(``work=``, ``out=``) and calibrations of this project's results, so they live here, not in the env
packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RECIPES"]

MAZE_V1_V2: dict[str, Any] = {
    # the CPU miniature in the collapse regime (issue 21; results/maze-v1-miniature-v2/README.md): a warm start that
    # reaches E with most candidates before RL, a second start biased to direct S -> E routes, 300 RL
    # steps evaluated at 50 / 150 / 300, one token budget (about 2x the longest demonstration) for
    # training and evaluation, one warm start per (start, mode) shared by the RL seeds
    "methods": "grpo,multi_rlvr,vpo,max_at_k,maxrl",
    "main_methods": "grpo,multi_rlvr,vpo",
    "main_seeds": 3,
    "other_seeds": 2,
    "starts": "random:env.demonstrations=random;direct:env.demonstrations=direct",
    "warm_seeds": 1,
    "steps": 300,
    "eval_steps": "50,150",
    # the model (2.5M parameters) of every run; results/maze-v1-miniature-v2/README.md holds its calibration.
    # lr=0.0001 and prompts_per_step=8 were the local engine's defaults when the grid ran (the default run's recipe
    # changed them on 2026-11-28); pinned here so new jobs train as the committed ones did (`experiment.LEGACY_PINS`)
    "train": "hidden_size=192 layers=4 heads=4 lr=0.0001 prompts_per_step=8",
    # the warm-up of each warm start: 1000 x 32 demonstrations, about 75 (multi) / 50 (single) minutes of one
    # CPU core; a GPU machine adds device=cuda (results/maze-v1-miniature-v2/gpu/run.sh). The GPU's 1000 x 64
    # starts of 2026-11-26 were lost with their machine; 1000 x 64 costs twice this on a CPU for +2 points
    # of validity (results/maze-v1-miniature-v2/README.md, calibration)
    "warm_train": "warmup_steps=1000 warmup_batch=32",
    "budget_single": 128,  # 2x the longest single demonstration (64 tokens, default tokenizer)
    "budget_multi": 384,  # 2x the longest multi demonstration (194 tokens); prompts <= 212, positions 1024
    "eval_tasks": 100,
    "eval_samples": 30,
    "work": "runs/experiment-maze-v1-v2",
    "keep_warm": "true",  # the warm starts (10 MB each) are committed, so a later session resumes the grid
    "out": "results/maze-v1-miniature-v2",
}


RECIPES: Mapping[str, Mapping[str, Mapping[str, Any]]] = {"maze-v1": {"v2": MAZE_V1_V2}}
"""env id -> recipe name -> options."""
