"""How maze-v1 is trained and evaluated: the paper's settings, each with its source.

The paper's appendix speaks first; where it is silent (lengths, epochs) the values are the authors'
public launcher (``train.sh`` and ``PAPER_REPRO.md`` §3.1 of github.com/ryanboldi/vpo).
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe, cite

__all__ = ["PROFILE"]

_TRAIN = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh (TASK=maze) and PAPER_REPRO.md §3.1, github.com/ryanboldi/vpo; the paper is silent"

RECIPE = VerlRecipe.cited(
    cite('paper, "Evaluation Tasks" (Maze): "We train Qwen3-4B"', model="Qwen/Qwen3-4B"),
    cite('paper, appendix "Compute Resources": one node of 4xH100 per run', n_gpus=4),
    cite(f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)", train_batch=128, mini_batch=64, micro_batch=8),
    cite(_AUTHORS, prompt_length=512, prompt_length_multi=768, prompt_length_goal=768),
    cite(_AUTHORS, response_single=512, response_multi=1024),
    cite("authors' PAPER_REPRO.md §3.1 launch command (EPOCHS=2); the paper is silent", epochs=2),
    cite(
        'paper, Table "Best@k on Maze" and Table "Goal-conditioned GRPO on Maze"',
        methods=("grpo", "random_w", "goal_cond", "max_at_k", "maxrl", "multi_rlvr", "vpo"),
    ),
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
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps"), as
    # printed: position, domain, reward dims, rho VPO, rho GRPO, best@16 VPO, best@16 GRPO, delta
    collinearity=CollinearityRow(1, "Maze", "4 reward feats (D=4)", 0.39, 0.37, 0.593, 0.432, 0.161),
)
