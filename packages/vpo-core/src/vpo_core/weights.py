"""Group-shared Dirichlet weights, reproducible in any process.

VPO scores every rollout of a group under the same K weight vectors. The rollouts of one group are
scored in different processes (veRL's reward workers), so the draws are a pure function of
``(seed, key)``: the sha256 digest of ``f"{seed}:{key}"`` sets the state of the numpy Generator
(PCG64) that draws that group's weights, never Python's salted ``hash()`` or a process-global
stream. A Dirichlet(alpha·1_d) vector is d Gamma(alpha) variates divided by their sum; numpy's
float64 samplers draw them (`numpy.random.Generator.standard_gamma`, which for alpha = 1 returns
the numbers of `numpy.random.Generator.standard_exponential`). One float64 sampler serves every
alpha (the draws' history is in the CHANGELOG).

Small concentrations are drawn in log space. Below `LOG_SPACE_ALPHA` a Gamma(alpha) variate is
Gamma(alpha + 1) · U^(1/alpha) (U uniform), so its logarithm is ``log Gamma(alpha + 1) - E / alpha``
with E ~ Exp(1); the weights are the softmax of those logarithms. The variates themselves underflow
for alpha around 1e-3 and below (each is below 1e-308 with probability ~exp(-709 alpha)), which used
to leave a draw of all zeros; in log space the largest always wins, so the weights approach the
simplex's vertices as alpha -> 0, the distribution's limit. alpha must lie in `ALPHA_RANGE`.

How VPO and random_w draw a group's weights is a named `WeightSampler` (``weight_sampler=`` of every
engine): `WEIGHT_SAMPLERS` holds ``dirichlet`` (the draws above, the paper's) and the samplers other
modules add through the ``vpo.weight_samplers`` entry-point group, loaded when first named (vpo-lab's
``sobol``, `vpo_lab.qmc`, arrives that way). `check_weight_options` checks a run's sampler, alpha
and K against the named sampler's limits before anything is drawn.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vpo_core.errors import ConfigError
from vpo_core.plugins import Registry

__all__ = [
    "ALPHA_RANGE",
    "LOG_SPACE_ALPHA",
    "MAX_DRAW_BYTES",
    "WEIGHT_SAMPLERS",
    "KeyedWeights",
    "WeightSampler",
    "check_alpha",
    "check_draw_size",
    "check_weight_options",
    "check_weight_sampler",
    "dirichlet_weights",
    "group_gamma_draws",
    "group_weights",
    "key_string",
    "keyed_generator",
    "stable_seed",
    "weight_sampler_help",
]


def key_string(key: Hashable) -> str:
    """The canonical text of a group key: ``str(key)``, or ``":"``-joined parts for tuples/lists."""
    if isinstance(key, tuple | list):
        return ":".join(key_string(part) for part in key)
    if isinstance(key, bytes):
        return key.hex()
    return str(key)


def _digest(seed: int, key: Hashable) -> bytes:
    return hashlib.sha256(f"{int(seed)}:{key_string(key)}".encode()).digest()


def stable_seed(seed: int, key: Hashable) -> int:
    """A 64-bit integer derived from ``(seed, key)``, identical in every process.

    Args:
        seed: The run's seed.
        key: The group key (a uid string, an int, or a tuple of those).

    Returns:
        ``int.from_bytes(sha256(f"{seed}:{key}").digest()[:8], "little")``.
    """
    return int.from_bytes(_digest(seed, key)[:8], "little")


ALPHA_RANGE: tuple[float, float] = (1e-300, 1e15)
"""The Dirichlet concentrations the samplers accept, inclusive. Below 1e-300 ``E / alpha`` of the
log-space draw overflows float64; above 1e15 Dir(alpha·1_d) is the centre of the simplex to within
float64's resolution (the spread of a weight is ~1/sqrt(d·alpha)), so a larger alpha asks for nothing
a smaller one does not already give. The Sobol sampler has a narrower range (`vpo_lab.qmc.SOBOL_ALPHA_RANGE`)."""

LOG_SPACE_ALPHA = 0.1
"""Below this concentration the Dirichlet draws are made in log space (see the module docstring);
at 0.1 a direct Gamma variate underflows with probability ~1e-31, so numpy's own draws are kept above."""

MAX_DRAW_BYTES = 2**30
"""The most memory (1 GiB) the weight draws of one call, or of one block of the VPO estimator
(`vpo_core.objectives`), may take: a K or a batch whose arrays would exceed it is refused up front
with a `ConfigError` naming the size, instead of failing (or swapping) mid-run."""


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def check_alpha(alpha: object, *, name: str = "alpha", limits: tuple[float, float] = ALPHA_RANGE) -> float:
    """The Dirichlet concentration as a float, or a `ConfigError` naming the accepted range.

    Args:
        alpha: The concentration.
        name: The option's name in the message.
        limits: The inclusive range (`ALPHA_RANGE`, or the Sobol sampler's).

    Raises:
        ConfigError: For a bool, a non-number, NaN, inf, or a value outside `limits`.
    """
    low, high = limits
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.integer | np.floating):
        raise ConfigError(f"{name} (Dirichlet concentration) must be a number in [{low:g}, {high:g}], got {alpha!r}.")
    value = float(alpha)
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(
            f"{name} (Dirichlet concentration) must be a finite positive number, got {alpha!r}; "
            f"the samplers accept [{low:g}, {high:g}]."
        )
    if not low <= value <= high:
        raise ConfigError(
            f"{name} (Dirichlet concentration) must lie in [{low:g}, {high:g}], got {alpha!r}: "
            + (
                "smaller concentrations overflow float64 even in log space."
                if value < low
                else "larger ones are the simplex's centre to float64's resolution (or beyond the sampler's accuracy)."
            )
        )
    return value


def check_draw_size(n_bytes: int, what: str) -> None:
    """Refuse an allocation above `MAX_DRAW_BYTES`, naming its size and the bound.

    Raises:
        ConfigError: If `n_bytes` exceeds the bound.
    """
    if n_bytes > MAX_DRAW_BYTES:
        raise ConfigError(
            f"{what} would allocate {n_bytes / 2**30:,.1f} GiB, over the {MAX_DRAW_BYTES / 2**30:g} GiB bound of "
            "the weight draws; lower num_weights (K; the paper uses 100) or the batch."
        )


def _check(d: int, k: int, alpha: float, groups: int = 1) -> float:
    if not _is_int(d) or d < 1:
        raise ConfigError(f"d (number of reward dimensions) must be a positive int, got {d!r}.")
    if not _is_int(k) or k < 1:
        raise ConfigError(f"k (number of weight draws) must be a positive int, got {k!r}.")
    value = check_alpha(alpha)
    factor = 3 if value < LOG_SPACE_ALPHA else 1  # the log-space draw holds two more arrays of the same size
    check_draw_size(8 * factor * int(groups) * int(d) * int(k), f"{groups} group(s) of K={k} weights of d={d}")
    return value


class KeyedWeights:
    """Dirichlet weights keyed by ``(seed, key)``: the same numbers for a key in every process.

    One numpy Generator (PCG64) serves every key: for each key its state is set from the sha256
    digest of ``f"{seed}:{key}"`` (the digest's 256 bits are the 128-bit state and the 128-bit
    increment, made odd). Setting the state through `numpy.random.PCG64.state` costs ~2 µs; a
    freshly seeded Generator per group would cost ~7 µs (its SeedSequence), a sixth of VPO's time.

    Args:
        seed: The run's seed.
    """

    def __init__(self, seed: int = 0) -> None:
        self._prefix = f"{int(seed)}:"
        self._bit_generator = np.random.PCG64()
        self._generator = np.random.Generator(self._bit_generator)

    def generator(self, key: Hashable) -> np.random.Generator:
        """The Generator, positioned at the start of `key`'s stream (valid until the next call)."""
        digest = hashlib.sha256((self._prefix + key_string(key)).encode()).digest()
        self._bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(digest[:16], "little"), "inc": int.from_bytes(digest[16:], "little") | 1},
            "has_uint32": 0,
            "uinteger": 0,
        }
        return self._generator

    def log_gamma_draws(self, d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0) -> NDArray[np.float64]:
        """The logarithms of K·d Gamma(alpha) variates per key, finite for every alpha in `ALPHA_RANGE`.

        At or above `LOG_SPACE_ALPHA` they are the logarithms of `gamma_draws`' numbers. Below it key
        b's Generator fills a (d, K) block of Gamma(alpha + 1) variates G, then a (d, K) block of
        Exp(1) variates E, and the result is ``log G - E / alpha`` (Gamma(alpha) = Gamma(alpha + 1)
        · U^(1/alpha), with -log U ~ Exp(1)).

        Returns:
            Log-variates, shape (B, K, d): a transposed view of a C-contiguous (B, d, K) array.
        """
        value = _check(d, k, alpha, len(keys))
        if value >= LOG_SPACE_ALPHA:
            with np.errstate(divide="ignore"):
                return np.log(self.gamma_draws(d, k, keys, alpha=value))
        out = np.empty((len(keys), d, k), dtype=np.float64)
        exponential = np.empty((d, k), dtype=np.float64)
        for b, key in enumerate(keys):
            rng = self.generator(key)
            out[b] = np.log(rng.standard_gamma(value + 1.0, size=(d, k)))
            rng.standard_exponential(out=exponential)
            out[b] -= exponential / value
        return out.transpose(0, 2, 1)

    def gamma_draws(self, d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0) -> NDArray[np.float64]:
        """K·d Gamma(alpha) variates per key: key b's Generator fills a (d, K) block in C order.

        For alpha = 1 (the paper's choice) numpy's `standard_exponential` is used: it returns exactly
        the numbers ``standard_gamma(1.0)`` would, faster. Below `LOG_SPACE_ALPHA` the variates are
        ``exp`` of `log_gamma_draws` (many underflow to 0 there: use `weights`, which never does).

        Returns:
            Variates, shape (B, K, d): a transposed view of a C-contiguous (B, d, K) array, the layout
            a batched ``r @ w.T`` wants.
        """
        value = _check(d, k, alpha, len(keys))
        if value < LOG_SPACE_ALPHA:
            return np.exp(self.log_gamma_draws(d, k, keys, alpha=value))
        draws = np.empty((len(keys), d, k), dtype=np.float64)
        for b, key in enumerate(keys):
            rng = self.generator(key)
            if value == 1.0:
                rng.standard_exponential(out=draws[b])
            else:
                draws[b] = rng.standard_gamma(value, size=(d, k))
        return draws.transpose(0, 2, 1)

    def weights(self, d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0) -> NDArray[np.float64]:
        """K Dirichlet(alpha·1_d) weight vectors per key: the gamma draws divided by their sums.

        Below `LOG_SPACE_ALPHA` the weights are the softmax of `log_gamma_draws` over the d
        components, so no draw underflows: as alpha -> 0 each vector approaches a vertex.

        Returns:
            Weights, shape (B, K, d) (a transposed view of a C-contiguous (B, d, K) array); every
            row is non-negative and sums to 1.
        """
        value = _check(d, k, alpha, len(keys))
        if value < LOG_SPACE_ALPHA:
            out = self.log_gamma_draws(d, k, keys, alpha=value)
            blocks = out.transpose(0, 2, 1)  # the contiguous (B, d, K) blocks: d runs along rows
            blocks -= blocks.max(axis=1, keepdims=True)
            np.exp(blocks, out=blocks)  # the largest component is exactly 1, so no sum is 0
        else:  # a direct draw is all zeros with probability below 1e-31 per component here
            out = self.gamma_draws(d, k, keys, alpha=value)
            blocks = out.transpose(0, 2, 1)
        blocks /= blocks.sum(axis=1, keepdims=True)  # sums of shape (B, 1, K)
        return out


def keyed_generator(seed: int, key: Hashable) -> np.random.Generator:
    """A numpy Generator at the start of the stream of ``(seed, key)``: the same numbers in every process."""
    return KeyedWeights(seed).generator(key)


def group_gamma_draws(
    d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> NDArray[np.float64]:
    """The Gamma(alpha) variates behind `group_weights` (`KeyedWeights.gamma_draws`), shape (B, k, d)."""
    return KeyedWeights(seed).gamma_draws(d, k, keys, alpha=alpha)


def group_weights(
    d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> NDArray[np.float64]:
    """K Dirichlet(alpha·1_d) weight vectors per group key.

    Args:
        d: Number of reward dimensions.
        k: Number of draws per group.
        keys: One key per group, length B.
        alpha: Symmetric Dirichlet concentration (1 = uniform on the simplex, the paper's choice).
        seed: The run's seed.

    Returns:
        Weights, shape (B, k, d) (a transposed view of a C-contiguous (B, d, k) array); every row
        is non-negative and sums to 1. Row b depends only on ``(seed, keys[b], d, k, alpha)``.
    """
    return KeyedWeights(seed).weights(d, k, keys, alpha=alpha)


def dirichlet_weights(d: int, k: int, *, alpha: float = 1.0, seed: int = 0, key: Hashable = 0) -> NDArray[np.float64]:
    """K Dirichlet(alpha·1_d) weight vectors for one group, identical in every process.

    Args:
        d: Number of reward dimensions.
        k: Number of draws.
        alpha: Symmetric Dirichlet concentration.
        seed: The run's seed.
        key: The group key (e.g. veRL's uid, or ``(step, task_id)``).

    Returns:
        Weights, shape (k, d), equal to ``group_weights(d, k, [key], alpha=alpha, seed=seed)[0]``.
    """
    return group_weights(d, k, [key], alpha=alpha, seed=seed)[0]


# ------------------------------------------------------------------------ the weight samplers
WeightDraw = Callable[[int, int, Sequence[Hashable], KeyedWeights, float], NDArray[np.float64]]
"""``draw(d, k, keys, streams, alpha) -> weights (B, k, d)``: K weight vectors per key, drawn from the
keys' streams (`KeyedWeights` of the run's seed), so every process gets the same weights for a key."""


@dataclass(frozen=True)
class WeightSampler:
    """A named way to draw the K group-shared weight vectors of VPO (and random_w's one).

    Attributes:
        name: Registry name (the value of ``weight_sampler=``).
        draw: The draws (`WeightDraw`): non-negative rows summing to 1, Dir(alpha·1_d) marginally.
        draw_bytes: ``draw_bytes(d, k, groups)``: bytes the draws of `groups` groups take at their peak
            (checked against `MAX_DRAW_BYTES` before a run draws anything).
        alpha_range: The concentrations it accepts, inclusive.
        check: ``check(d, k)`` raises a `ConfigError` naming a d or K it cannot draw (default: none).
        description: What its weights are, a plural noun phrase for summaries (``"K = 100 <description>
            per group"``).
    """

    name: str
    draw: WeightDraw
    draw_bytes: Callable[[int, int, int], int]
    alpha_range: tuple[float, float] = ALPHA_RANGE
    check: Callable[[int, int], None] | None = None
    description: str = ""


WEIGHT_SAMPLERS: Registry[WeightSampler] = Registry("weight sampler", "vpo.weight_samplers", WeightSampler)
"""Sampler name -> `WeightSampler`: ``dirichlet`` built in, others from ``vpo.weight_samplers`` entry points."""


def _dirichlet_draw(
    d: int, k: int, keys: Sequence[Hashable], streams: KeyedWeights, alpha: float
) -> NDArray[np.float64]:
    return streams.weights(d, k, keys, alpha=alpha)


def _dirichlet_bytes(d: int, k: int, groups: int) -> int:
    """The (groups, d, K) float64 draws, three such arrays below `LOG_SPACE_ALPHA` (counted always: a bound)."""
    return 8 * 3 * int(groups) * int(d) * int(k)


WEIGHT_SAMPLERS.register(
    "dirichlet",
    WeightSampler(
        name="dirichlet",
        draw=_dirichlet_draw,
        draw_bytes=_dirichlet_bytes,
        description="Dirichlet draws",
    ),
)
WEIGHT_SAMPLERS.seal_builtins()


def weight_sampler_help() -> str:
    """``"dirichlet or sobol (dirichlet: the paper's iid draws)"``: the installed samplers' names, for help texts.

    Reads package metadata only: no sampler's module is imported.
    """
    names = list(WEIGHT_SAMPLERS)
    return (", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]) + (
        " (dirichlet: the paper's iid draws)"
    )


_SAMPLER_PACKAGES = {"sobol": "vpo-lab"}
"""Samplers of the project's other packages, named with their package when it is not installed."""


def check_weight_sampler(sampler: object) -> str:
    """The sampler's name, or a `ConfigError` (a ValueError) naming the installed samplers (and the package to install)."""
    if not isinstance(sampler, str) or sampler not in WEIGHT_SAMPLERS:
        hint = ""
        if isinstance(sampler, str) and sampler in _SAMPLER_PACKAGES:
            package = _SAMPLER_PACKAGES[sampler]
            hint = f"; the {sampler} sampler comes with {package}: install it (pip install {package})"
        raise ConfigError(f"weight_sampler must be one of {tuple(WEIGHT_SAMPLERS)}, got {sampler!r}{hint}.")
    return sampler


def check_weight_options(
    alpha: object,
    num_weights: object,
    weight_sampler: object = "dirichlet",
    *,
    d: int = 1,
    groups: int = 1,
    rollouts: int = 1,
) -> None:
    """The weight options of a run, checked before anything is drawn: the one parse-time check.

    Args:
        alpha: Dirichlet concentration, in the sampler's `WeightSampler.alpha_range`.
        num_weights: K, a positive int (and one the sampler can draw).
        weight_sampler: A name of `WEIGHT_SAMPLERS`.
        d: Reward dimensions (1 when not known yet: the check is then a lower bound).
        groups: Groups drawn at once (the VPO estimator draws 16 at a time, `vpo_core.objectives`).
        rollouts: Scores per group and weight (G·m): the estimator's (groups, G, m, K) score array.

    Raises:
        ConfigError: Naming the option, the value and the limit, when any is out of range or the
            estimator's arrays would exceed `MAX_DRAW_BYTES`.
    """
    sampler = WEIGHT_SAMPLERS[check_weight_sampler(weight_sampler)]
    check_alpha(alpha, limits=sampler.alpha_range)
    if isinstance(num_weights, bool) or not isinstance(num_weights, int | np.integer) or num_weights < 1:
        raise ConfigError(f"num_weights (K) must be a positive int, got {num_weights!r}.")
    k = int(num_weights)
    if sampler.check is not None:
        sampler.check(d, k)
    total = sampler.draw_bytes(d, k, groups) + 8 * int(groups) * int(rollouts) * k
    check_draw_size(total, f"num_weights={k} (K) with {groups} group(s) of {rollouts} scores and d={d}")
