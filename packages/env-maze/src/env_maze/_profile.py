"""How maze-v1 is trained and evaluated: the paper's settings, each with its source.

The paper's appendix speaks first; where it is silent (lengths, epochs) the values are the authors'
public launcher (``train.sh`` and ``PAPER_REPRO.md`` §3.1 of github.com/ryanboldi/vpo).
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe

__all__ = ["PROFILE"]

_TRAIN = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh (TASK=maze) and PAPER_REPRO.md §3.1, github.com/ryanboldi/vpo; the paper is silent"

RECIPE = VerlRecipe(
    model="Qwen/Qwen3-4B",
    n_gpus=4,
    train_batch=128,
    mini_batch=64,
    micro_batch=8,
    prompt_length=512,
    prompt_length_multi=768,
    prompt_length_goal=768,
    response_single=512,
    response_multi=1024,
    epochs=2,
    methods=("grpo", "random_w", "goal_cond", "max_at_k", "maxrl", "multi_rlvr", "vpo"),
    sources={
        "model": 'paper, "Evaluation Tasks" (Maze): "We train Qwen3-4B"',
        "n_gpus": 'paper, appendix "Compute Resources": one node of 4xH100 per run',
        **dict.fromkeys(("train_batch", "mini_batch", "micro_batch"), f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)"),
        **dict.fromkeys(
            ("prompt_length", "prompt_length_multi", "prompt_length_goal", "response_single", "response_multi"),
            _AUTHORS,
        ),
        "epochs": "authors' PAPER_REPRO.md §3.1 launch command (EPOCHS=2); the paper is silent",
        "methods": 'paper, Table "Best@k on Maze" and Table "Goal-conditioned GRPO on Maze"',
    },
)

PROFILE = EnvProfile.from_recipe(
    # training rollouts: T = 1.0, top-p 1.0 (appendix "Training Setup"); budgets = the veRL response lengths
    RECIPE,
    # final evaluation: T = 0.7, top-p 1.0 (appendix "Final-evaluation sampling"); 1024 tokens as the
    # authors' maze evaluation (vpo_tasks/maze.py, add_eval_args max_tokens=1024)
    eval=Generation(temperature=0.7, top_p=1.0, max_new_tokens_single=1024, max_new_tokens_multi=1024),
    eval_samples=30,  # best@30 (Table "Best@k on Maze")
    eval_seeds=1,
    chat_template_kwargs={"enable_thinking": False},  # Qwen3; authors' train.sh and evaluation
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps")
    collinearity=CollinearityRow(
        position=1,
        domain="Maze",
        dims="4 reward feats (D=4)",
        rho_vpo=0.39,
        rho_grpo=0.37,
        best_vpo=0.593,
        best_grpo=0.432,
        delta=0.161,
    ),
)
