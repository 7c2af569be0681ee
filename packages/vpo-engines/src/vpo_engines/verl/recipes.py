"""VeRL overrides of one training cell (env × method × n), from the env's profile and the shared settings.

Nothing here names an env. A cell takes its domain values (model, GPUs, batch sizes, lengths, epochs,
sampling, chat-template options) from ``env.profile``: the env package's `VerlRecipe` where it has one,
`generic_recipe` where it does not. The values every domain shares are `SHARED` below, each with its
source (the paper's appendix "Training Setup" unless noted):

AdamW lr 1e-6 constant, no warm-up, weight decay 0.01, grad clip 1.0; PPO clip 0.2 with dual clip 3.0,
token-mean loss, ppo_epochs 1, no entropy bonus; low_var_kl KL loss 1e-3 against the initial policy, no
KL in the reward; n = 8 rollouts with top-k -1; the reference model CPU-offloaded; in-training
validation greedy. Operational settings (checkpoints, validation cadence, resume, logging) are
`RUN_DEFAULTS`; every value can be overridden on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vpo_core.env import TextEnv
from vpo_core.errors import ConfigError
from vpo_core.methods import get_method
from vpo_core.profile import EnvProfile, VerlRecipe
from vpo_core.registry import resolve_env_class
from vpo_core.weights import check_weight_sampler

__all__ = [
    "ESTIMATORS",
    "GENERIC_MODEL",
    "LOGGERS",
    "RUN_DEFAULTS",
    "SHARED",
    "Cell",
    "cell",
    "estimator_for",
    "generic_recipe",
    "overrides",
]

_PAPER = 'paper, appendix "Training Setup"'
_AUTHORS = "authors' train.sh, github.com/ryanboldi/vpo (the paper is silent)"

# (override, source): the settings of every cell. The actor prefix is written out so that the table in
# README_verl.md can be checked against this list by a test.
SHARED: tuple[tuple[str, str], ...] = (
    ("actor_rollout_ref.actor.optim.lr=1e-6", _PAPER),
    ("actor_rollout_ref.actor.optim.weight_decay=0.01", _PAPER),
    ("actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.0", f"{_PAPER} (no warm-up, constant schedule)"),
    ("actor_rollout_ref.actor.optim.lr_scheduler_type=constant", _PAPER),
    ("actor_rollout_ref.actor.optim.betas=[0.9,0.999]", _PAPER),
    ("actor_rollout_ref.actor.grad_clip=1.0", _PAPER),
    ("actor_rollout_ref.actor.clip_ratio=0.2", _PAPER),
    ("actor_rollout_ref.actor.clip_ratio_c=3.0", f"{_PAPER} (dual clip)"),
    ("actor_rollout_ref.actor.loss_agg_mode=token-mean", _PAPER),
    ("actor_rollout_ref.actor.ppo_epochs=1", _PAPER),
    ("actor_rollout_ref.actor.entropy_coeff=0", _PAPER),
    ("actor_rollout_ref.actor.use_kl_loss=true", _PAPER),
    ("actor_rollout_ref.actor.kl_loss_coef=0.001", _PAPER),
    ("actor_rollout_ref.actor.kl_loss_type=low_var_kl", f"{_PAPER} (the k3 estimator)"),
    ("algorithm.use_kl_in_reward=false", _PAPER),
    ("actor_rollout_ref.ref.fsdp_config.param_offload=true", f"{_PAPER} (reference model CPU-offloaded)"),
    ("actor_rollout_ref.model.enable_gradient_checkpointing=true", _AUTHORS),
    ("actor_rollout_ref.rollout.name=vllm", f"{_PAPER} (vLLM rollouts)"),
    ("actor_rollout_ref.rollout.top_k=-1", _PAPER),
    ("actor_rollout_ref.rollout.tensor_model_parallel_size=1", _AUTHORS),
    ("actor_rollout_ref.rollout.gpu_memory_utilization=0.5", _AUTHORS),
    ("actor_rollout_ref.rollout.val_kwargs.do_sample=false", f"{_PAPER} (in-training validation greedy)"),
    ("actor_rollout_ref.rollout.val_kwargs.temperature=0", f"{_PAPER} (in-training validation greedy)"),
    ("actor_rollout_ref.rollout.val_kwargs.n=1", f"{_PAPER} (in-training validation greedy)"),
    ("data.filter_overlong_prompts=true", f"{_AUTHORS}; the launcher counts the rows it drops"),
    ("reward.reward_manager.source=register", "vpo-engines' reward manager (README_verl.md)"),
    ("reward.reward_manager.name=vpo", "vpo-engines' reward manager (README_verl.md)"),
    ("trainer.critic_warmup=0", f"{_PAPER} (no critic)"),
)

RUN_DEFAULTS: Mapping[str, Any] = {
    "save_freq": 10,  # authors' train.sh; veRL also saves at the last step whenever save_freq > 0
    "test_freq": 50,  # authors' train.sh; veRL also validates before training and at the last step
    "max_ckpt_to_keep": 2,  # a crash during a save still leaves one complete checkpoint
    "resume_mode": "auto",  # restart the same command after a crash: it resumes from the latest checkpoint
    "nnodes": 1,  # the paper's runs use one node
}
"""Operational defaults of every run (own keys ``save_freq=``, ``test_freq=``, ... override them)."""

LOGGERS = ("console", "file", "tensorboard", "wandb", "mlflow", "swanlab", "trackio")
"""Trackers accepted by ``logger=`` (veRL's ``trainer.logger``); ``console`` and ``file`` need nothing."""

ESTIMATORS: dict[str, str] = {"zscore": "grpo_pop", "gdpo": "gdpo", "max_at_k": "max_at_k", "maxrl": "maxrl"}
"""veRL estimator of each group normaliser. veRL's built-in ``grpo`` divides by the unbiased std; the
paper's appendix uses the population std, hence ``grpo_pop`` (registered by vpo-engines' veRL plugin). A
normaliser added outside vpo-core is mapped by `vpo_engines.verl.plugin.register_estimator`."""

GENERIC_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
"""Model of an env without a paper recipe: small, instruction-tuned, and without a thinking mode, so no
chat-template option is needed. Pass ``model=`` for anything else."""


def generic_recipe(profile: EnvProfile) -> VerlRecipe:
    """The documented defaults of an env that declares no recipe.

    One node of 4 GPUs, the paper's batch sizes for models up to 4B (128 prompts, mini-batch 64,
    micro-batch 8), prompts up to 2048 tokens, one epoch, `GENERIC_MODEL`; responses take the env's
    training token budgets (``profile.train``).
    """
    src = "vpo-engines generic default (the env declares no recipe)"
    return VerlRecipe(
        model=GENERIC_MODEL,
        n_gpus=4,
        train_batch=128,
        mini_batch=64,
        micro_batch=8,
        prompt_length=2048,
        response_single=profile.train.max_new_tokens_single,
        response_multi=profile.train.max_new_tokens_multi,
        epochs=1,
        sources={
            "model": src,
            "n_gpus": src,
            "train_batch": src,
            "mini_batch": src,
            "micro_batch": src,
            "prompt_length": src,
            "response_single": "the env's profile.train.max_new_tokens_single",
            "response_multi": "the env's profile.train.max_new_tokens_multi",
            "epochs": src,
        },
    )


def estimator_for(method: str) -> str:
    """VeRL's ``algorithm.adv_estimator`` for a method (by its group normaliser).

    Raises:
        ConfigError: If the method's normaliser has no veRL estimator (a normaliser registered outside
            vpo-core), naming the ways to run it.
    """
    normalizer = get_method(method).normalizer
    if normalizer not in ESTIMATORS:
        known = ", ".join(f"{name} -> {est}" for name, est in ESTIMATORS.items())
        raise ConfigError(
            f"method {method!r} normalises with {normalizer!r}, which the veRL adapter has no advantage estimator "
            f"for (it maps {known}). Train it with the local engine (vpo train), or give it a veRL estimator "
            f"with vpo_engines.verl.plugin.register_estimator({normalizer!r}) in a module named by a "
            f"verl.plugins entry point (docs/adding-a-method.md)."
        )
    return ESTIMATORS[normalizer]


@dataclass(frozen=True)
class Cell:
    """Everything that distinguishes one training run, resolved from the env's profile and the method.

    Attributes:
        env_id: The env.
        method: The method.
        mode: The method's prompt mode.
        m: Answers per completion (1 in single mode).
        n: Rollouts per prompt.
        model: HF id or local path of the policy.
        n_gpus: GPUs per node.
        nnodes: Nodes.
        train_batch: Prompts per step.
        mini_batch: PPO mini-batch in prompts.
        micro_batch: Micro-batch per GPU.
        prompt_length: ``data.max_prompt_length``.
        response_length: ``data.max_response_length``.
        epochs: ``trainer.total_epochs``.
        temperature: Rollout temperature.
        top_p: Rollout top-p.
        chat_template_kwargs: ``data.apply_chat_template_kwargs``.
        estimator: ``algorithm.adv_estimator``.
        d: Reward dimensions (GDPO's keys ``r_0..r_{d-1}``).
        paper_recipe: Whether the values come from the env's paper recipe (else the generic defaults).
        extra_overrides: The recipe's further overrides, verbatim.
    """

    env_id: str
    method: str
    mode: str
    m: int
    n: int
    model: str
    n_gpus: int
    nnodes: int
    train_batch: int
    mini_batch: int
    micro_batch: int
    prompt_length: int
    response_length: int
    epochs: int
    temperature: float
    top_p: float
    chat_template_kwargs: Mapping[str, Any]
    estimator: str
    d: int
    paper_recipe: bool
    extra_overrides: tuple[str, ...] = ()


def _env_class(env: str | type[TextEnv[Any, Any]] | TextEnv[Any, Any]) -> type[TextEnv[Any, Any]]:
    if isinstance(env, str):
        return resolve_env_class(env)
    return env if isinstance(env, type) else type(env)


def cell(
    env: str | type[TextEnv[Any, Any]] | TextEnv[Any, Any],
    method: str,
    *,
    m: int | None = None,
    n: int = 8,
    model: str | None = None,
    n_gpus: int | None = None,
    nnodes: int = 1,
) -> Cell:
    """Resolve one cell from the env's profile (its paper recipe, or `generic_recipe`).

    Args:
        env: An env id, class or instance (only its class attributes are read: no data is loaded).
        method: A method of `vpo_core.METHODS`.
        m: Answers per completion (default: the method's; must be 1 for single-answer methods).
        n: Rollouts per prompt (8; the paper's ablation uses 24).
        model: HF id or path (default: the recipe's).
        n_gpus: GPUs per node (default: the recipe's).
        nnodes: Nodes.

    Raises:
        ValueError: On an unknown method or an m that does not fit the method.
        ConfigError: On non-positive sizes.
    """
    cls = _env_class(env)
    spec = get_method(method)
    m = spec.resolve_m(m)
    for name, value in (("n", n), ("nnodes", nnodes), ("n_gpus", n_gpus if n_gpus is not None else 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{name} must be a positive int, got {value!r}.")
    profile = cls.profile
    recipe = profile.recipe or generic_recipe(profile)
    return Cell(
        env_id=cls.env_id,
        method=method,
        mode=spec.mode,
        m=m,
        n=n,
        model=model or recipe.model,
        n_gpus=n_gpus or recipe.n_gpus,
        nnodes=nnodes,
        train_batch=recipe.train_batch,
        mini_batch=recipe.mini_batch,
        micro_batch=recipe.micro_batch,
        prompt_length=recipe.prompt_length_for(spec.mode, goal_prompt=spec.goal_prompt),
        response_length=recipe.response_length_for(spec.mode, m),
        epochs=recipe.epochs,
        temperature=profile.train.temperature,
        top_p=profile.train.top_p,
        chat_template_kwargs=dict(profile.chat_template_kwargs),
        estimator=estimator_for(method),
        d=cls.reward_spec.dim,
        paper_recipe=profile.recipe is not None,
        extra_overrides=tuple(recipe.extra_overrides),
    )


def _hydra_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return repr(value)


def _chat_kwargs(kwargs: Mapping[str, Any]) -> list[str]:
    # one forced key each: veRL's default is an empty struct dict, which refuses a whole-dict assignment
    return [f"++data.apply_chat_template_kwargs.{key}={_hydra_value(value)}" for key, value in sorted(kwargs.items())]


def overrides(
    c: Cell,
    *,
    train_files: str,
    val_files: str,
    checkpoint_dir: str,
    seed: int = 0,
    num_weights: int = 100,
    alpha: float = 1.0,
    weight_sampler: str = "dirichlet",
    k: int | None = None,
    logger: Sequence[str] = ("console",),
    save_freq: int = RUN_DEFAULTS["save_freq"],
    test_freq: int = RUN_DEFAULTS["test_freq"],
    max_ckpt_to_keep: int = RUN_DEFAULTS["max_ckpt_to_keep"],
    resume_mode: str = RUN_DEFAULTS["resume_mode"],
) -> list[str]:
    """Hydra overrides of veRL's ``ppo_trainer`` config for one cell.

    Args:
        c: The cell (`cell`).
        train_files: Parquet of the train split (from `export`).
        val_files: Parquet of the test split (in-training validation).
        checkpoint_dir: ``trainer.default_local_dir``.
        seed: Seed of the data order and of the group-shared Dirichlet weights.
        num_weights: K, the Dirichlet draws per group (VPO).
        alpha: Dirichlet concentration.
        weight_sampler: How VPO/random_w draw the group's weights: a name of `vpo_core.weights.WEIGHT_SAMPLERS`.
        k: The k of Max@k (default: the estimator's, max(2, n // 2)).
        logger: Trackers (`LOGGERS`).
        save_freq: Checkpoint every this many steps (and at the last step); -1 never.
        test_freq: Validate every this many steps (and at the last step); -1 never.
        max_ckpt_to_keep: Checkpoints kept on disk (older ones are deleted).
        resume_mode: ``auto`` (resume from the latest checkpoint in `checkpoint_dir`), ``disable``, or
            ``resume_path`` (with ``trainer.resume_from_path=...``).

    Raises:
        ConfigError: On an unknown tracker or resume mode.
    """
    unknown = [name for name in logger if name not in LOGGERS]
    if unknown or not logger:
        raise ConfigError(f"unknown logger(s) {unknown}; choose from {list(LOGGERS)}, e.g. logger=console,tensorboard.")
    if resume_mode not in ("auto", "disable", "resume_path"):
        raise ConfigError(f"resume_mode must be auto, disable or resume_path, got {resume_mode!r}.")
    check_weight_sampler(weight_sampler)
    trainer = _trainer_overrides(
        c,
        checkpoint_dir=checkpoint_dir,
        logger=logger,
        save_freq=save_freq,
        test_freq=test_freq,
        max_ckpt_to_keep=max_ckpt_to_keep,
        resume_mode=resume_mode,
    )
    return [
        *_data_overrides(c, train_files=train_files, val_files=val_files, seed=seed),
        *_actor_rollout_overrides(c),
        f"algorithm.adv_estimator={c.estimator}",
        f"+algorithm.vpo.seed={seed}",
        f"+algorithm.vpo.num_weights={num_weights}",
        f"+algorithm.vpo.alpha={alpha}",
        f"+algorithm.vpo.weight_sampler={weight_sampler}",
        *trainer,
        *([f"+algorithm.vpo.k={k}"] if k is not None else []),
        *_gdpo_overrides(c),
        *c.extra_overrides,  # last: the recipe's own overrides win
    ]


def _data_overrides(c: Cell, *, train_files: str, val_files: str, seed: int) -> list[str]:
    """``data.*``: the exported splits, batch size, lengths, chat-template options and data order."""
    return [
        f"data.train_files={train_files}",
        f"data.val_files={val_files}",
        f"data.train_batch_size={c.train_batch}",
        f"data.max_prompt_length={c.prompt_length}",
        f"data.max_response_length={c.response_length}",
        *_chat_kwargs(c.chat_template_kwargs),
        f"data.seed={seed}",
    ]


def _actor_rollout_overrides(c: Cell) -> list[str]:
    """``actor_rollout_ref.*``: the model, the `SHARED` settings, the cell's batch sizes and its sampling."""
    actor = "actor_rollout_ref.actor"
    return [
        f"actor_rollout_ref.model.path={c.model}",
        *(override for override, _ in SHARED),
        f"{actor}.ppo_mini_batch_size={c.mini_batch}",
        f"{actor}.ppo_micro_batch_size_per_gpu={c.micro_batch}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={c.micro_batch}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={c.micro_batch}",
        f"actor_rollout_ref.rollout.n={c.n}",
        f"actor_rollout_ref.rollout.temperature={c.temperature}",
        f"actor_rollout_ref.rollout.top_p={c.top_p}",
    ]


def _trainer_overrides(
    c: Cell,
    *,
    checkpoint_dir: str,
    logger: Sequence[str],
    save_freq: int,
    test_freq: int,
    max_ckpt_to_keep: int,
    resume_mode: str,
) -> list[str]:
    """``trainer.*``: epochs, GPUs, trackers, run name, checkpoints, validation cadence and resume."""
    return [
        f"trainer.total_epochs={c.epochs}",
        f"trainer.n_gpus_per_node={c.n_gpus}",
        f"trainer.nnodes={c.nnodes}",
        f"trainer.logger=[{','.join(logger)}]",
        "trainer.project_name=vpo",
        f"trainer.experiment_name={c.env_id}-{c.method}-n{c.n}",
        f"trainer.default_local_dir={checkpoint_dir}",
        f"trainer.save_freq={save_freq}",
        f"trainer.test_freq={test_freq}",
        f"trainer.max_actor_ckpt_to_keep={max_ckpt_to_keep}",
        f"trainer.resume_mode={resume_mode}",
    ]


def _gdpo_overrides(c: Cell) -> list[str]:
    """The settings of veRL's built-in gdpo estimator (none for other estimators)."""
    if c.estimator != "gdpo":
        return []
    keys = ",".join(f"r_{i}" for i in range(c.d))
    # the built-in gdpo estimator receives the per-dimension extras only in the legacy (v0) trainer
    return ["trainer.use_v1=false", f"+algorithm.gdpo_reward_keys=[{keys}]"]
