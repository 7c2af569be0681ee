"""`RewardSpec`: the named dimensions, bounds and default scalarisation of a vector reward."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["RewardSpec"]


@dataclass(frozen=True)
class RewardSpec:
    """Names, bounds and default weights of a d-dimensional vector reward.

    Attributes:
        names: Dimension names, in the order of the reward vector's entries, shape (d,).
        w_star: The paper's fixed scalarisation (the "GRPO training scalar"), shape (d,).
        low: Lower bound of each dimension, shape (d,).
        high: Upper bound of each dimension, shape (d,).
        descriptions: Human-readable name of each dimension, as written into the goal-conditioning
            prompt suffix, shape (d,).
    """

    names: tuple[str, ...]
    w_star: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    descriptions: tuple[str, ...]

    def __post_init__(self) -> None:
        d = len(self.names)
        if d == 0:
            raise ValueError("RewardSpec.names is empty: a vector reward needs at least one named dimension.")
        if len(set(self.names)) != d:
            raise ValueError(f"RewardSpec.names has duplicates: {self.names!r}; give each dimension its own name.")
        for field_name in ("w_star", "low", "high", "descriptions"):
            value = getattr(self, field_name)
            if len(value) != d:
                raise ValueError(
                    f"RewardSpec.{field_name} has {len(value)} entries but names has {d}; give one per dimension."
                )
        arrays = {name: np.asarray(getattr(self, name), dtype=np.float64) for name in ("w_star", "low", "high")}
        for name, array in arrays.items():
            if not np.all(np.isfinite(array)):
                raise ValueError(f"RewardSpec.{name} must be finite, got {getattr(self, name)!r}.")
        if np.any(arrays["low"] > arrays["high"]):
            raise ValueError(f"RewardSpec.low must not exceed high: low={self.low!r}, high={self.high!r}.")

    @classmethod
    def uniform(
        cls,
        names: Sequence[str],
        descriptions: Sequence[str] | None = None,
        *,
        low: float = 0.0,
        high: float = 1.0,
    ) -> RewardSpec:
        """A spec whose `w_star` is the uniform mean and whose dimensions share one range.

        Args:
            names: Dimension names, shape (d,).
            descriptions: Goal-conditioning descriptions, shape (d,); defaults to the names.
            low: Lower bound of every dimension.
            high: Upper bound of every dimension.

        Returns:
            The spec.
        """
        d = len(names)
        return cls(
            names=tuple(names),
            w_star=(1.0 / d,) * d if d else (),
            low=(float(low),) * d,
            high=(float(high),) * d,
            descriptions=tuple(descriptions) if descriptions is not None else tuple(names),
        )

    @property
    def dim(self) -> int:
        """Number of reward dimensions d."""
        return len(self.names)

    @property
    def w_star_array(self) -> NDArray[np.float64]:
        """`w_star` as a float64 array, shape (d,)."""
        return np.asarray(self.w_star, dtype=np.float64)

    @property
    def low_array(self) -> NDArray[np.float64]:
        """`low` as a float64 array, shape (d,)."""
        return np.asarray(self.low, dtype=np.float64)

    @property
    def high_array(self) -> NDArray[np.float64]:
        """`high` as a float64 array, shape (d,)."""
        return np.asarray(self.high, dtype=np.float64)

    def scalarize(self, rewards: ArrayLike, w: ArrayLike | None = None) -> NDArray[np.float64]:
        """Weighted sum of reward vectors.

        Args:
            rewards: Reward vectors, shape (..., d).
            w: Weights, shape (d,); defaults to `w_star`.

        Returns:
            The scalars, shape (...).

        Raises:
            ValueError: If the last axis of `rewards` or the length of `w` is not d.
        """
        r = np.asarray(rewards, dtype=np.float64)
        weights = self.w_star_array if w is None else np.asarray(w, dtype=np.float64)
        if weights.shape != (self.dim,):
            raise ValueError(f"w must have shape ({self.dim},) for reward dims {self.names}, got {weights.shape}.")
        if r.ndim == 0 or r.shape[-1] != self.dim:
            raise ValueError(f"rewards must have shape (..., {self.dim}), got {r.shape}.")
        return r @ weights

    def max_scalar(self, w: ArrayLike | None = None) -> float:
        """The largest value `scalarize` can take inside the bounds.

        Args:
            w: Weights, shape (d,); defaults to `w_star`.

        Returns:
            sum_i w_i * (high_i if w_i >= 0 else low_i).
        """
        weights = self.w_star_array if w is None else np.asarray(w, dtype=np.float64)
        return float(np.sum(np.where(weights >= 0, weights * self.high_array, weights * self.low_array)))

    def check(self, rewards: ArrayLike, *, what: str = "rewards") -> NDArray[np.float64]:
        """Validate reward vectors against the spec.

        Args:
            rewards: Reward vectors, shape (..., d).
            what: Name used in error messages.

        Returns:
            The rewards as a float64 array, shape (..., d).

        Raises:
            ValueError: If the shape is wrong, a value is not finite, or a value is out of bounds.
        """
        r = np.asarray(rewards, dtype=np.float64)
        if r.ndim == 0 or r.shape[-1] != self.dim:
            raise ValueError(f"{what} must have shape (..., {self.dim}) for dims {self.names}, got {r.shape}.")
        if not np.all(np.isfinite(r)):
            raise ValueError(f"{what} contains NaN or inf: {r!r}.")
        if np.any(r < self.low_array - 1e-12) or np.any(r > self.high_array + 1e-12):
            raise ValueError(f"{what} out of bounds [{self.low}, {self.high}]: {r!r}.")
        return r
