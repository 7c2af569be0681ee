"""How toolrl-v1 is trained and evaluated: the paper's settings, each with its source.

The paper's appendix speaks first; where it is silent (lengths, epochs) the values are the authors'
public launcher (``train.sh`` and ``PAPER_REPRO.md`` §3.4 of github.com/ryanboldi/vpo).
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe, cite

__all__ = ["PROFILE"]

_TRAIN = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh (TASK=tool) and PAPER_REPRO.md §3.4, github.com/ryanboldi/vpo; the paper is silent"

RECIPE = VerlRecipe.cited(
    cite('paper, appendix "ToolRL": "We train Qwen3-1.7B"', model="Qwen/Qwen3-1.7B"),
    cite('paper, appendix "Compute Resources": one node of 4xH100 per run', n_gpus=4),
    cite(f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)", train_batch=128, mini_batch=64, micro_batch=8),
    cite(f"{_AUTHORS} (ToolRL system prompts carry the tool schemas: long)", prompt_length=4096),
    cite(f"{_AUTHORS} (4352 leaves room for the m-answer block)", prompt_length_multi=4352),
    cite(f"{_AUTHORS} (4352 leaves room for the weight suffix)", prompt_length_goal=4352),
    cite(_AUTHORS, response_single=1024, response_multi=2048),
    cite("authors' PAPER_REPRO.md §3.4 (20 epochs, about 620 steps); the paper is silent", epochs=20),
    cite('paper, Table "Best@k on ToolRL"', methods=("grpo", "random_w", "max_at_k", "maxrl", "multi_rlvr", "vpo")),
)

PROFILE = EnvProfile.from_recipe(
    # training rollouts: T = 1.0, top-p 1.0 (appendix "Training Setup"); budgets = the veRL response lengths
    RECIPE,
    # final evaluation: T = 0.7, top-p 0.95 (appendix "Final-evaluation sampling"); 1024 tokens single as
    # the authors' evaluation (vpo_tasks/tool.py max_tokens=1024), the training budget 2048 for three answers
    eval=Generation(temperature=0.7, top_p=0.95, max_new_tokens_single=1024, max_new_tokens_multi=2048),
    eval_samples=30,  # best@30 (Table "Best@k on ToolRL")
    eval_seeds=4,  # "averaged over 4 evaluation seeds" (appendix "ToolRL")
    chat_template_kwargs={"enable_thinking": False},  # Qwen3; authors' train.sh and evaluation
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps"), as
    # printed: position, domain, reward dims, rho VPO, rho GRPO, best@16 VPO, best@16 GRPO, delta
    collinearity=CollinearityRow(4, "ToolRL", "4 sub-metrics (D=4)", 0.86, 0.62, 0.953, 0.924, 0.028),
)
