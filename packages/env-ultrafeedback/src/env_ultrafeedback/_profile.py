"""How ultrafeedback-v1 is trained and evaluated, each value with its source.

The paper's appendix "Reward Collinearity Predicts When VPO Helps" gives the model (Qwen3-4B), the
methods (GRPO, GDPO, goal-conditioned GRPO, Multi-RLVR, VPO; Table "Best@k on UltraFeedback") and
the evaluation pool (200 prompts × 50 samples, at epoch 2). The authors' public code
(github.com/ryanboldi/vpo, commits 767db79 and 218995d) has no UltraFeedback task, so the values the
paper leaves open come from the authors' common training stack (PAPER_REPRO.md §2, train.sh) or are
this package's choices, marked as such.
"""

from __future__ import annotations

from vpo_core.profile import CollinearityRow, EnvProfile, Generation, VerlRecipe, cite

__all__ = ["PROFILE", "RECIPE"]

_STACK = "authors' PAPER_REPRO.md §2 and train.sh (common stack, Qwen <= 4B preset), github.com/ryanboldi/vpo@218995d"
_CHOICE = (
    "choice of env-ultrafeedback: the paper and the authors' public code are silent for UltraFeedback; "
    "sized for multi-paragraph chat replies (see README)"
)

RECIPE = VerlRecipe.cited(
    cite('paper, Table "Best@k on UltraFeedback" (Qwen3-4B rows)', model="Qwen/Qwen3-4B"),
    cite('paper, appendix "Compute Resources": one node of 4xH100 per run', n_gpus=4),
    cite(_STACK, train_batch=128, mini_batch=64, micro_batch=8),
    cite(_CHOICE, prompt_length=1024),
    cite(_CHOICE + "; +256 tokens for the m-reply instruction", prompt_length_multi=1280),
    cite(_CHOICE + "; +256 tokens for the weight suffix", prompt_length_goal=1280),
    cite(_CHOICE, response_single=1024),
    cite(_CHOICE + "; twice the single budget, as the authors' EUREQA and ToolRL multi budgets", response_multi=2048),
    cite('paper, appendix "Reward Collinearity ...": pools "UltraFeedback (epoch 2)"', epochs=2),
    cite('paper, Table "Best@k on UltraFeedback"', methods=("grpo", "gdpo", "goal_cond", "multi_rlvr", "vpo")),
)

PROFILE = EnvProfile.from_recipe(
    # training rollouts: T = 1.0, top-p 1.0 (paper appendix "Training Setup"; authors' stack);
    # budgets = the veRL response lengths
    RECIPE,
    # final evaluation: T = 0.7 (every domain of the paper's final evaluation), top-p 1.0 (Maze/MuSiQue's;
    # the paper gives none for UltraFeedback: a choice)
    eval=Generation(temperature=0.7, top_p=1.0, max_new_tokens_single=1024, max_new_tokens_multi=2048),
    eval_samples=50,  # pools of 200 prompts × 50 samples (appendix "Reward Collinearity ...")
    eval_seeds=1,
    chat_template_kwargs={"enable_thinking": False},  # Qwen3; authors' train.sh and evaluation
    # its row of the paper's rho-vs-best@16 table (appendix "Reward Collinearity Predicts When VPO Helps"), as
    # printed: position, domain, reward dims, rho VPO, rho GRPO, best@16 VPO, best@16 GRPO, delta
    # the paper: here "VPO roughly matches GRPO" (a tie, not a loss)
    collinearity=CollinearityRow(
        5, "UltraFeedback", "5 ArmoRM dims (D=5)", 0.95, 0.82, 0.767, 0.772, -0.004, outcome="tie"
    ),
)
