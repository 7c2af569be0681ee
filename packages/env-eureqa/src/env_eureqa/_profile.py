"""How eureqa-v1 is trained and evaluated: the paper's settings, each with its source.

The paper's appendix speaks first; where it is silent (lengths, epochs) the values are the authors'
public launcher (``train.sh`` and ``PAPER_REPRO.md`` §3.3 of github.com/ryanboldi/vpo).
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe, cite

__all__ = ["PROFILE"]

_TRAIN = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh (TASK=eureqa) and PAPER_REPRO.md §3.3, github.com/ryanboldi/vpo; the paper is silent"

RECIPE = VerlRecipe.cited(
    cite('paper, appendix "EUREQA": "We train Qwen3-8B"', model="Qwen/Qwen3-8B"),
    cite('paper, appendix "Compute Resources": one node of 4xH100 per run', n_gpus=4),
    cite(f"{_TRAIN}, per-domain batch sizes (Qwen 7B/8B)", train_batch=64, mini_batch=32, micro_batch=2),
    cite(f"{_AUTHORS} (the same 1024 for every method)", prompt_length=1024),
    cite(_AUTHORS, response_single=512),
    cite(
        f"{_AUTHORS} (train.sh writes NUM_SOLUTIONS=5 for this branch; the paper and PAPER_REPRO.md use m = 3, "
        "which we follow)",
        response_multi=2048,
    ),
    cite("authors' PAPER_REPRO.md §3.3 (6 epochs, about 108 steps); the paper is silent", epochs=6),
    cite('paper, Table "Best@k on EUREQA"', methods=("grpo", "random_w", "max_at_k", "maxrl", "multi_rlvr", "vpo")),
)

PROFILE = EnvProfile.from_recipe(
    # training rollouts: T = 1.0, top-p 1.0 (appendix "Training Setup"); budgets = the veRL response lengths
    RECIPE,
    # final evaluation: T = 0.7, top-p 0.95 (appendix "Final-evaluation sampling"; the authors' script
    # passes top_p=1.0, the paper's text wins); 512 tokens single as the authors' evaluation
    # (vpo_tasks/eureqa.py max_tokens=512), the training budget 2048 for three chains
    eval=Generation(temperature=0.7, top_p=0.95, max_new_tokens_single=512, max_new_tokens_multi=2048),
    eval_samples=30,  # best@30 (Table "Best@k on EUREQA")
    eval_seeds=4,  # "averaged over 4 evaluation seeds" (appendix "EUREQA")
    chat_template_kwargs={"enable_thinking": False},  # Qwen3; authors' train.sh and evaluation
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps"), as
    # printed: position, domain, reward dims, rho VPO, rho GRPO, best@16 VPO, best@16 GRPO, delta
    collinearity=CollinearityRow(3, "EUREQA", "5 entity-EM (D=5)", 0.05, 0.03, 0.204, 0.182, 0.022),
)
