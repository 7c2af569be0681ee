"""The method registry: the training methods of the paper (section 4.2 and appendix) and their rules.

In the style of veRL's ``core_algos`` (``register_adv_est``), the two halves of every method are
registered by name with decorators, and a method is a record naming one of each:

* an **objective** (`register_objective`) turns each rollout's (m, d) reward matrix into the
  number(s) its group compares (`vpo_core.objectives` registers ``w_star``, ``random_w``,
  ``goal_w``, ``per_dim``, ``multi_sum`` and ``vpo``);
* a **normaliser** (`register_normalizer`) turns a group's scalars into advantages
  (`vpo_core.normalizers` registers ``zscore``, ``max_at_k``, ``maxrl``, ``gdpo``) and declares the
  keyword options it reads beyond ``std`` and ``eps``.

`register_method` adds a method with its prompt mode, default m, objective, normaliser and whether
its weights are written into the prompt. Two rules live here and nowhere else: how a method's mode
fixes m (`check_mode_m`, `Method.resolve_m`) and which goal weights a goal-conditioned prompt gets
(`goal_weights`, and `task_goal_weights` for a batch of tasks). `vpo_core.compute_advantages`, both
engines and the apps read these records: an entry point resolves a name once (`get_method`) and
passes the `Method` on. A method of another package is found through the ``vpo.methods`` entry-point
group: `METHODS` loads the entry point of a name when it is first looked up, so ``method=<name>`` works in
any process without importing the package first (`vpo_core.plugins`). docs/adding-a-method.md walks
through adding a method with its own normaliser.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from vpo_core.plugins import Registry
from vpo_core.types import Mode
from vpo_core.weights import dirichlet_weights

__all__ = [
    "METHODS",
    "MODES",
    "NORMALIZERS",
    "OBJECTIVES",
    "Method",
    "Normalizer",
    "check_mode_m",
    "get_method",
    "goal_weights",
    "register_method",
    "register_normalizer",
    "register_objective",
    "registered_part",
    "task_goal_weights",
]

MODES: tuple[Mode, ...] = ("single", "multi")

F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")

OBJECTIVES: dict[str, Callable[..., NDArray[np.float64]]] = {}
"""Objective name -> ``fn(rewards (B, G, m, d), inputs) -> scalars (B, G)`` (or (B, G, d))."""


@dataclass(frozen=True)
class Normalizer:
    """A registered group normaliser.

    Attributes:
        name: Registry name.
        fn: ``fn(scalars, *, std, eps, **options) -> advantages (B, G)``.
        options: The keyword options it reads besides ``std`` and ``eps``.
    """

    name: str
    fn: Callable[..., NDArray[np.float64]]
    options: tuple[str, ...]


NORMALIZERS: dict[str, Normalizer] = {}


def register_objective(name: str) -> Callable[[F], F]:
    """Decorator: register a rollout objective under `name` (a second registration must be the same function)."""

    def decorator(fn: F) -> F:
        if OBJECTIVES.get(name, fn) is not fn:
            raise ValueError(f"objective {name!r} is already registered to {OBJECTIVES[name]!r}.")
        OBJECTIVES[name] = fn
        return fn

    return decorator


def register_normalizer(name: str, *, options: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Decorator: register a group normaliser under `name`, with the options it reads beyond std and eps."""

    def decorator(fn: F) -> F:
        if name in NORMALIZERS and NORMALIZERS[name].fn is not fn:
            raise ValueError(f"normaliser {name!r} is already registered to {NORMALIZERS[name].fn!r}.")
        NORMALIZERS[name] = Normalizer(name, fn, tuple(options))
        return fn

    return decorator


def registered_part(registry: Mapping[str, V], kind: str, name: str, *, method: str) -> V:
    """The objective or normaliser `name` that method `method` names, from `registry`.

    Args:
        registry: `OBJECTIVES` or `NORMALIZERS`.
        kind: ``"objective"`` or ``"normaliser"`` (for the message).
        name: The part's registered name.
        method: The method's name (for the message).

    Raises:
        ValueError: If `name` is not registered, listing those that are.
    """
    try:
        return registry[name]
    except KeyError:
        raise ValueError(
            f"method {method!r} names {kind} {name!r}, which is not registered; registered: {sorted(registry)}."
        ) from None


# ------------------------------------------------------------------------------------ the rules
def check_mode_m(mode: Any, m: Any) -> None:
    """The prompt-mode rule: mode is ``"single"`` or ``"multi"``, m a positive int, and single means m = 1.

    Raises:
        ValueError: Naming the bad value and the fix.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")
    if not isinstance(m, int | np.integer) or isinstance(m, bool) or m < 1:
        raise ValueError(f"m must be a positive int, got {m!r}.")
    if mode == "single" and m != 1:
        raise ValueError(f"mode='single' asks for one answer, so m must be 1 (got m={m}); use mode='multi'.")


def goal_weights(d: int, *, seed: int, task_id: Hashable, namespace: str = "goal") -> NDArray[np.float64]:
    """The goal-conditioned baseline's weights for one task: one Dir(1) draw keyed by ``(namespace, task_id)``.

    The same task gets the same weights in every process and every epoch (the authors key them by
    row), so the prompt written at export time and the reward computed later agree. Training uses the
    namespace ``"goal"``; evaluation's Dirichlet conditioning uses ``"eval-goal"`` (other draws, same rule).

    Returns:
        Weights, shape (d,), non-negative and summing to 1.
    """
    return dirichlet_weights(d, 1, seed=seed, key=(namespace, task_id))[0]


def task_goal_weights(dims: Sequence[int], task_ids: Sequence[Hashable], *, seed: int) -> NDArray[np.float64]:
    """`goal_weights` of a batch of tasks, stacked: what each engine writes into its prompts.

    Args:
        dims: Each task's d, length T (equal for all tasks: the rows are stacked).
        task_ids: Each task's id, length T.
        seed: The run's seed.

    Returns:
        Weights, shape (T, d).

    Raises:
        ValueError: If the lengths differ, T is 0, or the tasks' d differ.
    """
    if len(dims) != len(task_ids) or not task_ids:
        raise ValueError(f"give one d per task and at least one task, got {len(dims)} d for {len(task_ids)} tasks.")
    return np.stack([goal_weights(int(d), seed=seed, task_id=t) for d, t in zip(dims, task_ids, strict=True)])


@dataclass(frozen=True)
class Method:
    """One training method.

    Attributes:
        name: Method name (``"vpo"``, ``"grpo"``, ...).
        mode: Prompt mode: ``"single"`` or ``"multi"``.
        m: Default number of answers per completion (1 in single mode; the paper uses 3).
        objective: Name of the registered objective: how a rollout's (m, d) rewards become its scalar(s).
        normalizer: Name of the registered normaliser: how a group's scalars become advantages.
        goal_prompt: Whether the group's weights are written into the prompt (goal-conditioned GRPO).
        description: One line for help texts.
    """

    name: str
    mode: Mode
    m: int
    objective: str
    normalizer: str
    goal_prompt: bool
    description: str

    def resolve_m(self, m: int | None = None) -> int:
        """The number of answers per completion for this method: `m`, or the method's default.

        Single-answer methods need m = 1; multi-answer methods need m >= 2 (a set of one answer is
        scalar RL: use grpo).

        Raises:
            ValueError: If m does not fit the method.
        """
        m = self.m if m is None else m
        if self.mode == "single" and m != 1:
            raise ValueError(f"method {self.name!r} is single-answer, so m must be 1 (got m={m}).")
        check_mode_m(self.mode, m)
        if self.mode == "multi" and m < 2:
            raise ValueError(f"method {self.name!r} writes m answers per completion; m must be >= 2 (got m={m}).")
        return int(m)

    def prompt_goal_weights(self, d: int, *, seed: int, task_id: Hashable) -> NDArray[np.float64] | None:
        """The weights to write into a task's prompt: `goal_weights` for goal-conditioned methods, else None."""
        return goal_weights(d, seed=seed, task_id=task_id) if self.goal_prompt else None

    def task_goal_weights(
        self, dims: Sequence[int], task_ids: Sequence[Hashable], *, seed: int
    ) -> NDArray[np.float64] | None:
        """`task_goal_weights` for goal-conditioned methods, else None."""
        return task_goal_weights(dims, task_ids, seed=seed) if self.goal_prompt else None


METHODS: Registry[Method] = Registry("method", "vpo.methods", Method)
"""Method name -> `Method`: vpo-core's own (built in, below) and those other packages add through the
``vpo.methods`` entry-point group, loaded when first looked up (`vpo_core.plugins.Registry`)."""


def register_method(
    name: str,
    *,
    mode: Mode,
    m: int,
    objective: str,
    normalizer: str,
    goal_prompt: bool = False,
    description: str = "",
) -> Method:
    """Add a method to `METHODS` (objective and normaliser are looked up by name when it is used).

    Raises:
        ValueError: If the name is taken or the mode and default m do not fit together.
    """
    if name in METHODS.registered():
        raise ValueError(f"method {name!r} is already registered.")
    method = Method(name, mode, m, objective, normalizer, goal_prompt, description)
    method.resolve_m()
    return METHODS.register(name, method)


def get_method(name: str | Method) -> Method:
    """Look up a method by name (a `Method` record is returned as it is, so entry points take either).

    A name registered in this process is returned at once; otherwise the installed ``vpo.methods``
    entry point of that name is loaded (its module imported) first, so a method of another package
    needs no import before a run names it.

    Raises:
        ValueError: If the name is unknown; the message lists the valid names.
    """
    if isinstance(name, Method):
        return name
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown method {name!r}; choose one of {sorted(METHODS)} (another package adds one through "
            "a 'vpo.methods' entry point)."
        ) from None


# The methods of the VPO paper (section 4.2 and appendix). Objectives: `vpo_core.objectives`; normalisers:
# `vpo_core.normalizers`.
register_method("grpo", mode="single", m=1, objective="w_star", normalizer="zscore",
                description="GRPO on the fixed scalar w*·r")  # fmt: skip
register_method("random_w", mode="single", m=1, objective="random_w", normalizer="zscore",
                description="GRPO on w·r, w ~ Dir(alpha) per group")  # fmt: skip
register_method("goal_cond", mode="single", m=1, objective="goal_w", normalizer="zscore", goal_prompt=True,
                description="GRPO on w·r, w ~ Dir(1) written into the prompt")  # fmt: skip
register_method("gdpo", mode="single", m=1, objective="per_dim", normalizer="gdpo",
                description="per-dimension z-scores, summed, batch-whitened")  # fmt: skip
register_method("max_at_k", mode="single", m=1, objective="w_star", normalizer="max_at_k",
                description="unbiased max@k transform of w*·r, z-scored")  # fmt: skip
register_method("maxrl", mode="single", m=1, objective="w_star", normalizer="maxrl",
                description="(r - mean) / (mean + eps) on w*·r")  # fmt: skip
register_method("multi_rlvr", mode="multi", m=3, objective="multi_sum", normalizer="zscore",
                description="sum of w*·r over de-duplicated answers")  # fmt: skip
register_method("vpo", mode="multi", m=3, objective="vpo", normalizer="zscore",
                description="mean over K shared Dirichlet draws of best-of-m w·r")  # fmt: skip

# Controls of the mechanism (issue 38; not methods of the paper): VPO with one thing about its weightings
# changed. They run wherever a method runs (engines, tabular study, experiment grid).
register_method("vpo_w_star_max", mode="multi", m=3, objective="vpo_w_star_max", normalizer="zscore",
                description="control: VPO with its weightings replaced by w* (best-of-m w*·r)")  # fmt: skip
register_method("vpo_k1", mode="multi", m=3, objective="vpo_one_draw", normalizer="zscore",
                description="control: VPO with K = 1 group-shared Dirichlet draw")  # fmt: skip
register_method("vpo_unshared", mode="multi", m=3, objective="vpo_unshared", normalizer="zscore",
                description="control: VPO with one Dirichlet draw per rollout, not shared by the group")  # fmt: skip
METHODS.seal_builtins()  # an entry point may add methods, not replace these
