"""How musique-v1 is trained and evaluated: the paper's settings, each with its source.

The paper's appendix speaks first; where it is silent (lengths) the values are the authors' public
launcher (``train.sh`` and ``PAPER_REPRO.md`` §3.2 of github.com/ryanboldi/vpo).
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe, cite

__all__ = ["PROFILE"]

_TRAIN = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh (TASK=musique) and PAPER_REPRO.md §3.2, github.com/ryanboldi/vpo; the paper is silent"

RECIPE = VerlRecipe.cited(
    cite('paper, appendix "MuSiQue": "We train Qwen3-1.7B"', model="Qwen/Qwen3-1.7B"),
    cite('paper, appendix "Compute Resources": one node of 4xH100 per run', n_gpus=4),
    cite(f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)", train_batch=128, mini_batch=64, micro_batch=8),
    cite(_AUTHORS, prompt_length=4096, prompt_length_multi=5120, prompt_length_goal=5120),
    cite(_AUTHORS, response_single=512, response_multi=1024),
    cite('paper, appendix "MuSiQue": "for one epoch across all methods"', epochs=1),
    cite(
        'paper, Table "Best@k on MuSiQue" and the n = 24 ablation table (GRPO, GDPO, random w)',
        methods=("grpo", "random_w", "gdpo", "max_at_k", "maxrl", "multi_rlvr", "vpo"),
    ),
)

PROFILE = EnvProfile.from_recipe(
    # training rollouts: T = 1.0, top-p 1.0 (appendix "Training Setup"); budgets = the veRL response lengths
    RECIPE,
    # final evaluation: T = 0.7, top-p 1.0 (appendix "Final-evaluation sampling"); 1024 tokens as the
    # authors' MuSiQue evaluation (vpo_tasks/musique.py, add_eval_args max_tokens=1024)
    eval=Generation(temperature=0.7, top_p=1.0, max_new_tokens_single=1024, max_new_tokens_multi=1024),
    eval_samples=30,  # best@30 (Table "Best@k on MuSiQue")
    eval_seeds=1,
    chat_template_kwargs={"enable_thinking": False},  # Qwen3; authors' train.sh and evaluation
    report_dims=("answer_f1",),  # the F1@30 column of Table "Best@k on MuSiQue"
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps"), as
    # printed: position, domain, reward dims, rho VPO, rho GRPO, best@16 VPO, best@16 GRPO, delta
    collinearity=CollinearityRow(2, "MuSiQue", "4 hop + 1 F1 (D=5)", 0.12, 0.11, 0.864, 0.841, 0.023),
)
