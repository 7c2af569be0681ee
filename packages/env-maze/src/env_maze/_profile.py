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
        "train_batch": f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)",
        "mini_batch": f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)",
        "micro_batch": f"{_TRAIN}, per-domain batch sizes (Qwen <= 4B)",
        "prompt_length": _AUTHORS,
        "prompt_length_multi": _AUTHORS,
        "prompt_length_goal": _AUTHORS,
        "response_single": _AUTHORS,
        "response_multi": _AUTHORS,
        "epochs": "authors' PAPER_REPRO.md §3.1 launch command (EPOCHS=2); the paper is silent",
        "methods": 'paper, Table "Best@k on Maze" and Table "Goal-conditioned GRPO on Maze"',
    },
)

MINIATURE_V2 = {
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
    # the model (2.5M parameters) of every run; results/maze-v1-miniature-v2/README.md holds its calibration
    "train": "hidden_size=192 layers=4 heads=4",
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

PROFILE = EnvProfile(
    # training rollouts: T = 1.0, top-p 1.0 (appendix "Training Setup"); budgets = the veRL response lengths
    train=Generation(temperature=1.0, top_p=1.0, max_new_tokens_single=512, max_new_tokens_multi=1024),
    # final evaluation: T = 0.7, top-p 1.0 (appendix "Final-evaluation sampling"); 1024 tokens as the
    # authors' maze evaluation (vpo_tasks/maze.py, add_eval_args max_tokens=1024)
    eval=Generation(temperature=0.7, top_p=1.0, max_new_tokens_single=1024, max_new_tokens_multi=1024),
    eval_samples=30,  # best@30 (Table "Best@k on Maze")
    eval_seeds=1,
    chat_template_kwargs={"enable_thinking": False},  # Qwen3; authors' train.sh and evaluation
    recipe=RECIPE,
    experiments={"v2": MINIATURE_V2},
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
