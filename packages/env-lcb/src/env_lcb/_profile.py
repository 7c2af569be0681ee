"""How lcb-v1 is trained and evaluated: the paper's LiveCodeBench case study, each value with its source.

Every value is in the paper's appendix "LiveCodeBench (case study)": Qwen2.5-Coder-7B-Instruct on
8xH100, train batch 64 / mini-batch 32, n = 8, T = 0.8, context 4096 + 4096, one epoch (about 379
steps), m = 3, 30 candidates per problem at T = 0.8 for pass@k and best@k. (The authors' train.sh
has 1280 + 2048 for lcb; the paper's text wins.)
"""

from __future__ import annotations

from vpo_core.profile import EnvProfile, Generation, VerlRecipe, cite

__all__ = ["PROFILE"]

_LCB = 'paper, appendix "LiveCodeBench (case study)"'

RECIPE = VerlRecipe.cited(
    cite(_LCB, model="Qwen/Qwen2.5-Coder-7B-Instruct"),
    cite(f"{_LCB}: FSDP across 8xH100 80GB", n_gpus=8),
    cite(f"{_LCB}: train batch 64", train_batch=64),
    cite(f"{_LCB}: mini-batch 32", mini_batch=32),
    cite('paper, appendix "Training Setup", per-domain batch sizes (Qwen 7B/8B: micro-batch 2)', micro_batch=2),
    cite(f"{_LCB}: max context 4096 + 4096", prompt_length=4096, response_single=4096),
    cite(f"{_LCB}: max context 4096 + 4096 (the same budget for the m = 3 chain)", response_multi=4096),
    cite(f"{_LCB}: one epoch, about 379 steps; evaluated at global_step_378", epochs=1),
    cite(f"{_LCB}: a two-arm study, VPO and scalar GRPO", methods=("grpo", "vpo")),
)

PROFILE = EnvProfile.from_recipe(
    RECIPE,
    # training rollouts and final evaluation at T = 0.8 (appendix "LiveCodeBench (case study)"); top-p is
    # not stated for LCB, so the appendix's general 1.0
    train_temperature=0.8,
    eval=Generation(temperature=0.8, top_p=1.0, max_new_tokens_single=4096, max_new_tokens_multi=4096),
    eval_samples=30,  # "we sample 30 candidates per problem"
    eval_seeds=1,
    chat_template_kwargs={},  # Qwen2.5-Coder has no thinking mode
)
