"""How musique-v1 is trained and evaluated: the paper's settings, each with its source.

The paper's appendix speaks first; where it is silent (lengths) the values are the authors' public
launcher (``train.sh`` and ``PAPER_REPRO.md`` §3.2 of github.com/ryanboldi/vpo).
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe

__all__ = ["PROFILE"]

_TRAIN = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh (TASK=musique) and PAPER_REPRO.md §3.2, github.com/ryanboldi/vpo; the paper is silent"

RECIPE = VerlRecipe(
    model="Qwen/Qwen3-1.7B",
    n_gpus=4,
    train_batch=128,
    mini_batch=64,
    micro_batch=8,
    prompt_length=4096,
    prompt_length_multi=5120,
    prompt_length_goal=5120,
    response_single=512,
    response_multi=1024,
    epochs=1,
    methods=("grpo", "random_w", "gdpo", "max_at_k", "maxrl", "multi_rlvr", "vpo"),
    sources={
        "model": 'paper, appendix "MuSiQue": "We train Qwen3-1.7B"',
        "n_gpus": 'paper, appendix "Compute Resources": one node of 4xH100 per run',
        **dict.fromkeys(("train_batch", "mini_batch", "micro_batch"), f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)"),
        **dict.fromkeys(
            ("prompt_length", "prompt_length_multi", "prompt_length_goal", "response_single", "response_multi"),
            _AUTHORS,
        ),
        "epochs": 'paper, appendix "MuSiQue": "for one epoch across all methods"',
        "methods": 'paper, Table "Best@k on MuSiQue" and the n = 24 ablation table (GRPO, GDPO, random w)',
    },
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
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps")
    collinearity=CollinearityRow(
        position=2,
        domain="MuSiQue",
        dims="4 hop + 1 F1 (D=5)",
        rho_vpo=0.12,
        rho_grpo=0.11,
        best_vpo=0.864,
        best_grpo=0.841,
        delta=0.023,
    ),
)
