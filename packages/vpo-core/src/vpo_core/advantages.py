"""Advantages for VPO and every baseline of the paper, over a `RolloutBatch` (B groups of G rollouts).

`compute_advantages(batch, config)` is the one entry point: the method's registered objective turns
each group's training rewards (G, m, d_b) into rollout scalars (`rollout_scalars`), and its registered
normaliser turns each group's scalars into advantages (`normalize_scalars`). `AdvantageConfig` is the
one options record (method, m, seed, K, alpha, weight sampler, std, eps, the normaliser's options),
checked once when it is made; every engine's config embeds one. The pieces live along their registries:

* `vpo_core.batch`: the `RolloutBatch` record and `score_groups`, the one scoring step;
* `vpo_core.methods`: the registries and the `Method` records;
* `vpo_core.objectives`: the scalarisations and the objectives registered from them;
* `vpo_core.normalizers`: the group normalisers (z-score, max@k, MaxRL, GDPO) and their option checks;
* `vpo_core.layout`: flat batches with group ids (veRL's layout) and the z-score over them.

Engine adapters import the building blocks from those modules. Conventions and numerics: see
`vpo_core.normalizers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import Std, check_std, finite_or_raise
from vpo_core.batch import RolloutBatch
from vpo_core.methods import Method, check_mode_m, get_method
from vpo_core.normalizers import apply_normalizer, check_options, normalizer_of
from vpo_core.objectives import GROUPS_PER_BLOCK, ObjectiveInputs, objective_of
from vpo_core.weights import check_weight_options

__all__ = ["AdvantageConfig", "RolloutBatch", "compute_advantages", "normalize_scalars", "rollout_scalars"]

_BATCH_OPTIONS = ("response_lengths",)
"""Normaliser options that are data of the batch (`RolloutBatch.lengths`), not options of a run."""


# ------------------------------------------------------------------------------------ the options
@dataclass(frozen=True)
class AdvantageConfig:
    """How a run turns rewards into advantages: every option of the objective and the normaliser.

    Made with `parse` (a method name, m defaulting to the method's) or directly with a `Method`
    record; either way every value is checked when it is made, so an engine checks its options once,
    at parse time, and passes the record on. The engines' command lines keep their flat options
    (``method=``, ``m=``, ``num_weights=``, ``alpha=``, ``weight_sampler=``, ``std=``; veRL's
    ``algorithm.vpo.*``) and build this record from them.

    Attributes:
        method: The method (`vpo_core.methods.get_method`).
        m: Candidates per completion (1 for single-answer methods, >= 2 for multi-answer ones): what
            completions are rendered and scored with.
        seed: Seed of the group-shared weights.
        num_weights: K, the weight draws per group (vpo).
        alpha: Dirichlet concentration (vpo, random_w).
        weight_sampler: How vpo and random_w draw the group-shared weights: a name of
            `vpo_core.weights.WEIGHT_SAMPLERS` (``"dirichlet"``, iid draws, the paper's).
        std: ``"population"`` (the paper) or ``"unbiased"`` (veRL); every method but maxrl.
        eps: Added to the std (to the mean for maxrl); a finite number >= 0.
        options: The method's normaliser options, by name: ``k`` (max_at_k, default max(2, G // 2)),
            ``divide_by_n`` (maxrl, veRL's official form), ``gdpo_weights`` (gdpo's channel weights, (d,)).
    """

    method: Method
    m: int
    seed: int = 0
    num_weights: int = 100
    alpha: float = 1.0
    weight_sampler: str = "dirichlet"
    std: Std = "population"
    eps: float = 1e-6
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check every value (the one copy of these checks).

        Raises:
            ValueError: Naming the option, the value and what is accepted; a `vpo_core.errors.ConfigError`
                for alpha, num_weights or weight_sampler (`vpo_core.weights.check_weight_options`).
        """
        if not isinstance(self.method, Method):
            raise TypeError(f"method must be a Method record, got {self.method!r}; use AdvantageConfig.parse(name).")
        self.method.resolve_m(self.m)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise ValueError(f"seed must be an int, got {self.seed!r}.")
        batch_data = sorted(name for name in self.options if name in _BATCH_OPTIONS)
        if batch_data:
            raise ValueError(
                f"{batch_data} are data of the batch, not options: pass them in the RolloutBatch (lengths=)."
            )
        set_options = {name: value for name, value in self.options.items() if value is not None}
        check_options(normalizer_of(self.method), self.std, self.eps, set_options, owner=f"method {self.method.name!r}")
        check_weight_options(self.alpha, self.num_weights, self.weight_sampler)
        object.__setattr__(self, "options", set_options)

    @classmethod
    def parse(
        cls,
        method: str | Method = "vpo",
        *,
        m: int | None = None,
        seed: int = 0,
        num_weights: int = 100,
        alpha: float = 1.0,
        weight_sampler: str = "dirichlet",
        std: str = "population",
        eps: float = 1e-6,
        options: Mapping[str, Any] | None = None,
        groups: int = 1,
        group_size: int = 1,
    ) -> AdvantageConfig:
        """The record of a run's options, looked up and checked once.

        Args:
            method: A name of `vpo_core.METHODS`, or its `Method` record.
            m: Candidates per completion; default the method's (3 for multi, 1 for single).
            seed: Seed of the group-shared weights.
            num_weights: K (vpo).
            alpha: Dirichlet concentration (vpo, random_w).
            weight_sampler: A name of `vpo_core.weights.WEIGHT_SAMPLERS`.
            std: ``"population"`` or ``"unbiased"``.
            eps: Added to the std; a finite number >= 0.
            options: The normaliser's options (``k``, ``divide_by_n``, ``gdpo_weights``); None values are unset.
            groups: Groups per batch the run will see (prompts per step): with `group_size`, the size
                of the estimator's arrays is checked now (`vpo_core.weights.check_weight_options`).
            group_size: Rollouts per group (G).

        Raises:
            ValueError: For an unknown method (the message lists the valid names), an m that does not
                fit it, a bad std or eps, an option its normaliser does not read; a
                `vpo_core.errors.ConfigError` for alpha, num_weights or weight_sampler out of range, or
                K so large that the estimator's arrays would exceed `vpo_core.weights.MAX_DRAW_BYTES`.
        """
        record = get_method(method)
        check_std(std)
        config = cls(
            record,
            record.resolve_m(m),
            seed=seed,
            num_weights=num_weights,
            alpha=alpha,
            weight_sampler=weight_sampler,
            std=std,  # type: ignore[arg-type]  # checked above
            eps=eps,
            options=dict(options or {}),
        )
        config.check_size(groups=groups, group_size=group_size)
        return config

    @classmethod
    def from_run(cls, run: Any) -> AdvantageConfig:
        """`parse` of an engine's run config (the local `TrainConfig`, TRL's config).

        `run` is any record with the option names as attributes: ``method``, ``m``, ``seed``, ``num_weights``,
        ``alpha``, ``weight_sampler``, ``std``, ``prompts_per_step``, ``group_size``.

        Raises:
            ValueError: As `parse`.
        """
        return cls.parse(
            run.method,
            m=run.m,
            seed=run.seed,
            num_weights=run.num_weights,
            alpha=run.alpha,
            weight_sampler=run.weight_sampler,
            std=run.std,
            groups=run.prompts_per_step,
            group_size=run.group_size,
        )

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any], *, method: str | Method, m: int | None = None) -> AdvantageConfig:
        """`parse` of options given by name in a mapping (veRL's ``algorithm.vpo`` block): the one reader of it.

        Reads ``seed`` (0), ``num_weights`` (100), ``alpha`` (1.0), ``weight_sampler`` (``"dirichlet"``),
        ``std`` (``"population"``) and ``eps`` (1e-6), cast from text where YAML gives text, and of the
        normaliser options only those the method's normaliser reads (``k`` for max_at_k, ``divide_by_n`` for
        maxrl, ...), so one block serves every method and estimator; other keys are ignored.

        Args:
            options: The options by name.
            method: A name of `vpo_core.METHODS`, or its `Method` record.
            m: Candidates per completion; default the method's.

        Raises:
            ValueError: As `parse`, or for a value that is not a number where one is needed.
        """
        record = get_method(method)
        reads = [name for name in normalizer_of(record).options if name not in _BATCH_OPTIONS]
        return cls.parse(
            record,
            m=m,
            seed=int(options.get("seed", 0)),
            num_weights=int(options.get("num_weights", 100)),
            alpha=float(options.get("alpha", 1.0)),
            weight_sampler=str(options.get("weight_sampler", "dirichlet")),
            std=str(options.get("std", "population")),
            eps=float(options.get("eps", 1e-6)),
            options={name: options[name] for name in reads if options.get(name) is not None},
        )

    def check_size(self, *, groups: int, group_size: int, d: int = 1) -> None:
        """Refuse a batch shape whose weight draws and scores would exceed `vpo_core.weights.MAX_DRAW_BYTES`.

        Args:
            groups: Groups in a batch (the estimator draws at most `GROUPS_PER_BLOCK` at a time).
            group_size: Rollouts per group (G); each scores m candidates.
            d: Reward dimensions (1 when not known yet: a lower bound).

        Raises:
            ConfigError: Naming K, the shape and the limit.
        """
        check_weight_options(
            self.alpha,
            self.num_weights,
            self.weight_sampler,
            d=d,
            groups=min(groups, GROUPS_PER_BLOCK),
            rollouts=group_size * self.m,
        )


# ------------------------------------------------------------------------------ rollout scalars
def rollout_scalars(batch: RolloutBatch, config: AdvantageConfig) -> NDArray[np.float64]:
    """The number each rollout contributes to its group: the method's registered objective.

    Groups that share d and w* are scored by one vectorised call of the objective; groups of
    different d (env-lcb) are scored bucket by bucket, each under its own w*.

    Args:
        batch: The batch; its ``training_rewards`` are read (m must be 1 for single-answer methods),
            with its ``w_star``, ``keys`` and (goal_cond only, required there) ``goal_weights``.
        config: The run's options (method, seed, K, alpha, weight sampler).

    Returns:
        Scalars, shape (B, G); for gdpo the per-dimension rewards, shape (B, G, d).

    Raises:
        ValueError: On an m the method cannot read, goal weights for a method that does not read them,
            scalars that overflow float64, or gdpo groups of different d; a `vpo_core.errors.ConfigError`
            for K so large that the estimator's arrays would exceed `vpo_core.weights.MAX_DRAW_BYTES`.
    """
    method = config.method
    objective = objective_of(method)
    if batch.goal_weights is not None and not method.goal_prompt:
        raise ValueError(
            f"goal_weights apply to goal-conditioned methods only; method {method.name!r} does not read them."
        )
    try:
        check_mode_m(method.mode, batch.m)
    except ValueError:
        raise ValueError(
            f"method {method.name!r} is single-answer, so rewards must have m=1 (shape (B, G, 1, d)), got m={batch.m}."
        ) from None
    buckets: dict[tuple[float, ...], list[int]] = {}  # w* (its length is d) -> member groups, in batch order
    if all(w is batch.w_star[0] for w in batch.w_star):  # one w* object for all (the usual case): one bucket
        buckets[()] = list(range(batch.n_groups))
    else:
        for b, w in enumerate(batch.w_star):
            buckets.setdefault(tuple(w), []).append(b)
    parts = [(idx, _bucket_scalars(objective, batch, config, idx)) for idx in buckets.values()]
    if len(parts) == 1:
        return parts[0][1]
    out: list[Any] = [None] * batch.n_groups
    for idx, values in parts:
        for j, b in enumerate(idx):
            out[b] = values[j]
    if method.objective == "per_dim" and len({o.shape[-1] for o in out}) != 1:
        raise ValueError("gdpo needs the same d in every group; pad per-test rewards (e.g. tc_0..tc_15) first.")
    return np.stack(out)


def _bucket_scalars(
    objective: Any, batch: RolloutBatch, config: AdvantageConfig, idx: list[int]
) -> NDArray[np.float64]:
    """The objective on the groups `idx` (one d, one w*) stacked: scalars (len(idx), G) (gdpo: (len(idx), G, d))."""
    whole = batch.dense is not None and len(idx) == batch.n_groups
    r = batch.dense[1] if whole and batch.dense is not None else np.stack([batch.training_rewards[b] for b in idx])
    n_groups, group_size, _, d = r.shape
    # K, the sampler and the size of the (16, K, d) draws and (16, G, m, K) scores, before any work
    config.check_size(groups=n_groups, group_size=group_size, d=d)
    inputs = ObjectiveInputs(
        w_star=batch.w_star[idx[0]],
        keys=[batch.keys[b] for b in idx],
        seed=config.seed,
        num_weights=int(config.num_weights),
        alpha=float(config.alpha),
        goal_weights=None if batch.goal_weights is None else np.stack([batch.goal_weights[b] for b in idx]),
        weight_sampler=str(config.weight_sampler),
    )
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by name
        scalars = objective(r, inputs)
    return finite_or_raise(scalars, f"the rollout scalars of method {config.method.name!r}")


# ------------------------------------------------------------------------------ normalising
def normalize_scalars(
    scalars: ArrayLike, config: AdvantageConfig, *, lengths: ArrayLike | None = None
) -> NDArray[np.float64]:
    """The method's registered normaliser applied to rollout scalars (the second half of `compute_advantages`).

    Args:
        scalars: From `rollout_scalars`: shape (B, G), or (B, G, d) for gdpo.
        config: The run's options (std, eps and the normaliser's options).
        lengths: Response lengths in tokens, shape (B, G) (`RolloutBatch.lengths`): passed to a normaliser
            that reads ``response_lengths`` (gdpo's token-weighted whitening), ignored by the others.

    Returns:
        Advantages, shape (B, G), all finite.

    Raises:
        ValueError: For bad values (e.g. max_at_k's k not below G), or no finite answer.
    """
    normalizer = normalizer_of(config.method)
    options = dict(config.options)
    if lengths is not None and "response_lengths" in normalizer.options:
        options["response_lengths"] = lengths
    return apply_normalizer(
        normalizer, scalars, std=config.std, eps=config.eps, options=options, owner=f"method {config.method.name!r}"
    )


def compute_advantages(batch: RolloutBatch, config: AdvantageConfig) -> NDArray[np.float64]:
    """Advantages of a batch for any method of the paper.

    Example::

        batch = RolloutBatch.of(rewards, w_star=w_star, keys=[f"{step}:{t}" for t in task_ids])  # (B, G, m, d)
        advantages = compute_advantages(batch, AdvantageConfig.parse("vpo", seed=0))  # (B, G)

    Args:
        batch: The groups (`vpo_core.batch.score_groups` from an env, or `RolloutBatch.of` from arrays).
            Give keys that change every step (e.g. ``(step, task_id)`` or veRL's uid) so groups get fresh weights.
        config: The method and its options (`AdvantageConfig.parse`).

    Returns:
        Advantages, shape (B, G), one per rollout (broadcast to its tokens by the engine); never NaN.

    Raises:
        ValueError: For a method/m mismatch, goal weights a method does not read (or their absence for
            goal_cond), or input with no finite answer.
    """
    scalars = rollout_scalars(batch, config)
    return normalize_scalars(scalars, config, lengths=batch.lengths)
